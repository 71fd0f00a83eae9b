#include "services/dispatcher/pg_dispatch_store.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/model/proto_enums.h"
#include "common/pg/pg_arrays.h"
#include "common/pg/pg_prepared.h"
#include "common/pg/sql_enums.h"
#include "common/time/proto_time.h"
#include "pqxx/pqxx"
#include "services/dispatcher/late_result.h"
#include "services/dispatcher/result_key.h"

namespace jobwheel::dispatcher {
namespace {

// Every statement takes its rows as array parameters (one per column, unnest()-ed) instead of
// SQL text built per row: no per-row quoting, a fixed statement text, and one round trip per
// statement whatever the batch size. The pool plans them once per connection with index
// lookups only (PgPool::PlanMode::kIndexLookups): an update joined to its unnest()-ed rows is
// a nested loop of primary-key lookups. (Repeating the key as `id = ANY($ids)` there made the
// cached plan compare every row with every other: quadratic in the batch.)

// Trigger answers and executor results update overlapping sets of runs from different
// connections; taking the row locks in id order first keeps them from deadlocking.
void LockRunsInIdOrder(pqxx::work& tx, const std::string& ids) {
  ExecPrepared(tx, "lock_runs",
               "SELECT 1 FROM runs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE", ids);
}

// A trigger answer moves a run only while it is PENDING: RUNNING sets its start time, any
// other (terminal) status its end time.
const std::string& RecordTriggerOutcomesSql() {
  static const std::string* const text = [] {
    const std::string pending = sql::SqlInt(v1::RUN_STATUS_PENDING);
    const std::string running = sql::SqlInt(v1::RUN_STATUS_RUNNING);
    return new std::string(
        absl::StrCat("UPDATE runs r SET "
                     "status = CASE WHEN r.status = ",
                     pending, " THEN v.status ELSE r.status END, ",
                     "start_time = CASE WHEN r.status = ", pending, " AND v.status = ", running,
                     " THEN COALESCE(r.start_time, v.at) ELSE r.start_time END, ",
                     "end_time = CASE WHEN r.status = ", pending, " AND v.status <> ", running,
                     " THEN v.at ELSE r.end_time END, ",
                     "trigger_message = r.trigger_message || v.msg "
                     "FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[]) "
                     "AS v(id, status, msg, at) WHERE r.id = v.id "
                     "RETURNING r.id, r.status, v.status"));
  }();
  return *text;
}

// A success of a job without child jobs needs nothing from the scheduler's follow-up monitor
// (retries, alarms and child jobs are for the others), so it is marked done here rather than
// by one more write per run there. A held trigger answer (tmsg, ta) folded in: its suffix is
// appended and its time is the trigger's start, as if it had been written first.
const std::string& RecordResultsSql() {
  static const std::string* const text = new std::string(absl::StrCat(
      "UPDATE runs r SET status = v.status, result_code = v.code, result_message = v.msg, "
      "start_time = COALESCE(v.st, r.start_time, v.ta, v.et), end_time = v.et, "
      "trigger_message = r.trigger_message || v.tmsg, "
      "followup_done = (v.status = ",
      sql::SqlInt(v1::RUN_STATUS_SUCCEEDED),
      " AND NOT EXISTS (SELECT 1 FROM jobs j "
      "WHERE j.id = r.job_id AND cardinality(j.child_job_ids) > 0)) "
      "FROM unnest($1::bigint[], $2::int[], $3::int[], $4::text[], $5::timestamptz[], "
      "$6::timestamptz[], $7::text[], $8::timestamptz[]) "
      "AS v(id, status, code, msg, st, et, tmsg, ta) "
      "WHERE r.id = v.id"));
  return *text;
}

// The runs one DispatchFires inserts, column by column for one unnest() insert.
struct RunColumns {
  std::vector<int64_t> fire, job;
  std::vector<std::string> app, handler, address, message, param;
  std::vector<std::string> key_hash;  // Hex: decoded to bytea by the insert.
  std::vector<int> trigger, attempt, shard_index, shard_total, routing, status;
  std::vector<absl::optional<absl::Time>> scheduled, end, trigger_time;

  // A run of fire f (its key already set); a run that failed at planning ends at `now`.
  void Add(const v1::Fire& f, const std::string& run_param, absl::Time scheduled_time,
           int routing_strategy, const PlannedRun& run, absl::Time now, absl::Time trigger_at) {
    const bool failed = run.status != v1::RUN_STATUS_PENDING;
    key_hash.push_back(absl::BytesToHexString(ResultKeyHash(run.result_key)));
    fire.push_back(f.fire_id());
    job.push_back(f.job().id());
    app.push_back(f.job().app());
    handler.push_back(f.job().handler());
    trigger.push_back(static_cast<int>(f.trigger_type()));
    attempt.push_back(f.attempt());
    shard_index.push_back(run.shard_index);
    shard_total.push_back(run.shard_total);
    address.push_back(run.executor_address);
    routing.push_back(routing_strategy);
    status.push_back(static_cast<int>(run.status));
    message.push_back(run.trigger_message);
    param.push_back(run_param);
    scheduled.push_back(scheduled_time);
    end.push_back(failed ? absl::optional<absl::Time>(now) : absl::nullopt);
    trigger_time.push_back(failed ? now : std::max(now, trigger_at));
  }

  // Inserts them; the ids of the rows inserted by (fire, shard): a shard that existed already
  // (ON CONFLICT) is not among them.
  absl::flat_hash_map<std::pair<int64_t, int32_t>, int64_t> Insert(pqxx::work& tx) const {
    absl::flat_hash_map<std::pair<int64_t, int32_t>, int64_t> inserted_ids;
    if (fire.empty()) return inserted_ids;
    for (const auto& r : ExecPrepared(
             tx, "insert_runs",
             "INSERT INTO runs (fire_id, job_id, app, handler, trigger_type, attempt, "
             "shard_index, shard_total, executor_address, routing_strategy, status, "
             "trigger_message, param, scheduled_time, trigger_time, end_time, "
             "result_key_hash) "
             "SELECT u.fire_id, u.job_id, u.app, u.handler, u.trigger_type, u.attempt, "
             "u.shard_index, u.shard_total, u.address, u.routing, u.status, u.message, u.param, "
             "u.scheduled, u.triggered, u.ended, decode(u.key_hash, 'hex') FROM unnest("
             "$1::bigint[], $2::bigint[], "
             "$3::text[], $4::text[], $5::int[], $6::int[], $7::int[], $8::int[], $9::text[], "
             "$10::int[], $11::int[], $12::text[], $13::text[], $14::timestamptz[], "
             "$15::timestamptz[], $16::timestamptz[], $17::text[]) AS u(fire_id, job_id, app, "
             "handler, trigger_type, attempt, shard_index, shard_total, address, routing, "
             "status, message, param, scheduled, ended, triggered, key_hash) "
             "ON CONFLICT (fire_id, shard_index) DO NOTHING "
             "RETURNING id, fire_id, shard_index",
             ToPgIntArray(fire), ToPgIntArray(job), ToPgArray(app), ToPgArray(handler),
             ToPgIntArray(trigger), ToPgIntArray(attempt), ToPgIntArray(shard_index),
             ToPgIntArray(shard_total), ToPgArray(address), ToPgIntArray(routing),
             ToPgIntArray(status), ToPgArray(message), ToPgArray(param), ToPgTimeArray(scheduled),
             ToPgTimeArray(end), ToPgTimeArray(trigger_time), ToPgArray(key_hash))) {
      inserted_ids[{r[1].as<int64_t>(), r[2].as<int32_t>()}] = r[0].as<int64_t>();
    }
    return inserted_ids;
  }
};

}  // namespace

absl::StatusOr<std::vector<FireResult>> PgDispatchStore::DispatchFires(
    const std::vector<v1::Fire>& fires, absl::Time now, const FirePlanner& plan) {
  std::vector<FireResult> results;
  absl::Status status = pool_.Run("dispatch_fires", [&](pqxx::connection& conn) {
    results.assign(fires.size(), FireResult());
    if (fires.empty()) return;
    pqxx::work tx(conn);
    std::vector<int64_t> ids;
    ids.reserve(fires.size());
    for (const v1::Fire& f : fires) ids.push_back(f.fire_id());

    struct Row {
      int64_t job_id;
      int status;
      std::string reason;
    };
    absl::flat_hash_map<int64_t, Row> rows;
    // ORDER BY id: concurrent dispatchers lock in the same order, so they cannot deadlock.
    for (const auto& r :
         ExecPrepared(tx, "lock_fires",
                      "SELECT id, job_id, status, reason FROM fires WHERE id = ANY($1::bigint[]) "
                      "ORDER BY id FOR UPDATE",
                      ToPgIntArray(ids))) {
      rows[r[0].as<int64_t>()] = Row{r[1].as<int64_t>(), r[2].as<int>(), r[3].as<std::string>()};
    }

    // Decide every fire; a fire id repeated in the batch is handled once.
    absl::flat_hash_map<int64_t, size_t> first_index;
    std::vector<int64_t> lookup_runs;  // Fires whose existing runs we report.
    RunColumns runs;                   // The runs to insert.
    // The fires' new status and reason.
    std::vector<int64_t> f_id;
    std::vector<int> f_status;
    std::vector<std::string> f_reason;
    for (size_t i = 0; i < fires.size(); ++i) {
      const v1::Fire& f = fires[i];
      FireResult& out = results[i];
      out.fire_id = f.fire_id();
      auto [seen, inserted] = first_index.emplace(f.fire_id(), i);
      if (!inserted) continue;  // Copied from the first occurrence below.
      auto row = rows.find(f.fire_id());
      if (row == rows.end()) {
        out.not_found = true;
        out.status = v1::FIRE_STATUS_FAILED;
        out.message = absl::StrCat("fire ", f.fire_id(), ": not found");
        continue;
      }
      if (row->second.job_id != f.job().id()) {
        out.not_found = true;
        out.status = v1::FIRE_STATUS_FAILED;
        out.message = absl::StrCat("fire ", f.fire_id(), ": belongs to job ", row->second.job_id,
                                   ", not job ", f.job().id());
        continue;
      }
      if (row->second.status != v1::FIRE_STATUS_PENDING) {
        out.duplicate = true;
        out.status = static_cast<v1::FireStatus>(row->second.status);
        out.message = row->second.reason.empty() ? absl::StrCat("fire ", f.fire_id(), ": already ",
                                                                v1::FireStatus_Name(out.status))
                                                 : row->second.reason;
        lookup_runs.push_back(f.fire_id());
        continue;
      }
      FirePlan p = plan(f);
      out.status = p.status;
      out.message = p.status == v1::FIRE_STATUS_FAILED ? p.reason : std::string();
      if (p.status == v1::FIRE_STATUS_DISPATCHED && !p.runs.empty()) {
        out.message = p.runs.front().trigger_message;
      }
      const v1::Job& job = f.job();
      const std::string param = f.has_param() ? f.param() : job.param();
      const absl::Time scheduled = FromProto(f.scheduled_time());
      const int routing = static_cast<int>(
          job.routing_strategy() == v1::ROUTING_STRATEGY_UNSPECIFIED ? v1::ROUTING_STRATEGY_FIRST
                                                                     : job.routing_strategy());
      for (PlannedRun& run : p.runs) {
        // Every run gets a key, FAILED ones too: no result can be made up for any of them.
        if (run.result_key.empty()) run.result_key = NewResultKey();
        runs.Add(f, param, scheduled, routing, run, now, p.trigger_time);
        out.created.push_back(CreatedRun{0, run});
      }
      f_id.push_back(f.fire_id());
      f_status.push_back(static_cast<int>(p.status));
      f_reason.push_back(p.reason);
    }

    // Insert runs; map returned ids back to (fire, shard).
    const absl::flat_hash_map<std::pair<int64_t, int32_t>, int64_t> inserted_ids = runs.Insert(tx);
    if (!f_id.empty()) {
      // The scheduler's reason (e.g. a misfire's count and range) is kept; a dispatch
      // failure's reason is appended to it.
      const std::string fire_ids = ToPgIntArray(f_id);
      ExecPrepared(
          tx, "update_fires",
          "UPDATE fires f SET status = v.status, reason = CASE WHEN v.reason = '' THEN "
          "f.reason WHEN f.reason = '' THEN v.reason ELSE f.reason || '; ' || v.reason END, "
          "dispatch_time = $4::timestamptz FROM unnest($1::bigint[], $2::int[], $3::text[]) "
          "AS v(id, status, reason) WHERE f.id = v.id",
          fire_ids, ToPgIntArray(f_status), ToPgArray(f_reason), ToPgTimestamp(now));
    }
    // Keep only runs really inserted (a conflicting row means the shard existed already).
    for (size_t i = 0; i < fires.size(); ++i) {
      FireResult& out = results[i];
      if (out.duplicate || out.not_found || first_index[out.fire_id] != i) continue;
      std::vector<CreatedRun> kept;
      bool conflict = false;
      for (CreatedRun& c : out.created) {
        auto it = inserted_ids.find({out.fire_id, c.planned.shard_index});
        if (it == inserted_ids.end()) {
          conflict = true;
          continue;
        }
        c.run_id = it->second;
        out.run_ids.push_back(c.run_id);
        kept.push_back(std::move(c));
      }
      out.created = std::move(kept);
      if (conflict) lookup_runs.push_back(out.fire_id);
    }
    if (!lookup_runs.empty()) {
      absl::flat_hash_map<int64_t, std::vector<int64_t>> existing;
      for (const auto& r :
           ExecPrepared(tx, "runs_of_fires",
                        "SELECT fire_id, id FROM runs WHERE fire_id = ANY($1::bigint[]) "
                        "ORDER BY fire_id, shard_index",
                        ToPgIntArray(lookup_runs))) {
        existing[r[0].as<int64_t>()].push_back(r[1].as<int64_t>());
      }
      for (size_t i = 0; i < fires.size(); ++i) {
        FireResult& out = results[i];
        if (out.not_found || first_index[out.fire_id] != i) continue;
        auto it = existing.find(out.fire_id);
        if (it != existing.end()) out.run_ids = it->second;
      }
    }
    tx.commit();
    // Repeated fire ids in one batch: report the first occurrence's outcome, as duplicates.
    for (size_t i = 0; i < fires.size(); ++i) {
      const size_t first = first_index[fires[i].fire_id()];
      if (first == i) continue;
      results[i] = results[first];
      results[i].duplicate = true;
      results[i].created.clear();
    }
  });
  if (!status.ok()) return status;
  return results;
}

absl::StatusOr<std::vector<int64_t>> PgDispatchStore::RecordTriggerOutcomes(
    const std::vector<TriggerOutcome>& outcomes) {
  std::vector<int64_t> finished;
  absl::Status status = pool_.Run("record_trigger_outcomes", [&](pqxx::connection& conn) {
    finished.clear();
    if (outcomes.empty()) return;
    pqxx::work tx(conn);
    std::vector<int64_t> ids;
    std::vector<int> statuses;
    std::vector<std::string> messages;
    std::vector<absl::optional<absl::Time>> at;
    for (const TriggerOutcome& o : outcomes) {
      ids.push_back(o.run_id);
      statuses.push_back(static_cast<int>(o.status));
      messages.push_back(o.message_suffix);
      at.push_back(o.at);
    }
    const std::string run_ids = ToPgIntArray(ids);
    LockRunsInIdOrder(tx, run_ids);
    for (const auto& r :
         ExecPrepared(tx, "record_trigger_outcomes", RecordTriggerOutcomesSql(), run_ids,
                      ToPgIntArray(statuses), ToPgArray(messages), ToPgTimeArray(at))) {
      const int new_status = r[1].as<int>();
      if (IsTerminal(static_cast<v1::RunStatus>(new_status)) && new_status == r[2].as<int>()) {
        finished.push_back(r[0].as<int64_t>());
      }
    }
    tx.commit();
  });
  if (!status.ok()) return status;
  return finished;
}

absl::StatusOr<std::vector<int64_t>> PgDispatchStore::RerouteRuns(
    const std::vector<Reroute>& reroutes) {
  std::vector<int64_t> moved;
  absl::Status status = pool_.Run("reroute_runs", [&](pqxx::connection& conn) {
    moved.clear();
    if (reroutes.empty()) return;
    pqxx::work tx(conn);
    std::vector<int64_t> all_ids;
    for (const Reroute& r : reroutes) all_ids.push_back(r.run_id);
    // Locked in id order (as trigger answers and results lock them); the status is tested
    // here rather than in the update, whose plan would then walk the open-runs index.
    absl::flat_hash_map<int64_t, int> status_of;
    for (const auto& row : ExecPrepared(
             tx, "lock_reroute_runs",
             "SELECT id, status FROM runs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE",
             ToPgIntArray(all_ids))) {
      status_of[row[0].as<int64_t>()] = row[1].as<int>();
    }
    std::vector<int64_t> ids;
    std::vector<std::string> addresses, messages;
    for (const Reroute& r : reroutes) {
      auto it = status_of.find(r.run_id);
      if (it == status_of.end() || it->second != v1::RUN_STATUS_PENDING) continue;
      ids.push_back(r.run_id);
      addresses.push_back(r.executor_address);
      messages.push_back(r.message_suffix);
    }
    if (!ids.empty()) {
      ExecPrepared(tx, "reroute_runs",
                   "UPDATE runs r SET executor_address = v.address, "
                   "trigger_message = r.trigger_message || v.msg "
                   "FROM unnest($1::bigint[], $2::text[], $3::text[]) AS v(id, address, msg) "
                   "WHERE r.id = v.id",
                   ToPgIntArray(ids), ToPgArray(addresses), ToPgArray(messages));
    }
    tx.commit();
    moved = std::move(ids);
  });
  if (!status.ok()) return status;
  return moved;
}

absl::StatusOr<std::vector<ResultRecord>> PgDispatchStore::RecordResults(
    const std::vector<v1::RunResult>& results, absl::Time now, const AppScope& scope,
    const std::vector<TriggerOutcome>& answers) {
  std::vector<ResultRecord> records;
  absl::flat_hash_map<int64_t, const TriggerOutcome*> answer_of;
  for (const TriggerOutcome& a : answers) answer_of.emplace(a.run_id, &a);
  absl::Status status = pool_.Run("record_results", [&](pqxx::connection& conn) {
    records.clear();
    if (results.empty()) return;
    pqxx::work tx(conn);
    std::vector<int64_t> all_ids;
    all_ids.reserve(results.size());
    for (const v1::RunResult& r : results) all_ids.push_back(r.run_id());
    // Lock in id order (trigger answers update the same runs from other connections) and
    // decide each result here from the run's state, so the write below touches only the
    // runs it records. (A single statement that also tested `status IN (1, 2)` let the
    // planner scan the whole open-runs index, dead entries included, for every batch.)
    absl::flat_hash_map<int64_t, ResultDisposition> disposition;
    absl::flat_hash_map<int64_t, const v1::RunResult*> result_of;
    for (const v1::RunResult& r : results) result_of.emplace(r.run_id(), &r);
    std::vector<int64_t> late_ids;
    std::vector<std::string> late_texts;
    for (const auto& row :
         ExecPrepared(tx, "lock_result_runs",
                      "SELECT id, status, app, result_key_hash, late_result IS NOT NULL "
                      "FROM runs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE",
                      ToPgIntArray(all_ids))) {
      const int64_t id = row[0].as<int64_t>();
      const auto run_status = static_cast<v1::RunStatus>(row[1].as<int>());
      const std::string app = row[2].as<std::string>();
      const v1::RunResult& result = *result_of.at(id);
      const bool in_scope =
          !scope.has_value() || std::find(scope->begin(), scope->end(), app) != scope->end();
      ResultDisposition d;
      if (!in_scope) {
        d = ResultDisposition::kForbidden;
      } else if (!row[3].is_null() &&
                 !ResultKeyMatches(result.result_key(), pqxx::binarystring(row[3]).str())) {
        d = ResultDisposition::kBadKey;
      } else if (!IsTerminal(run_status)) {
        d = ResultDisposition::kRecorded;
      } else if (run_status == result.status() || row[4].as<bool>()) {
        d = ResultDisposition::kDuplicate;
      } else {
        d = ResultDisposition::kLate;
        late_ids.push_back(id);
        late_texts.push_back(LateResultText(result, now));
      }
      disposition[id] = d;
    }
    if (!late_ids.empty()) {
      ExecPrepared(tx, "record_late_results",
                   "UPDATE runs r SET late_result = v.text "
                   "FROM unnest($1::bigint[], $2::text[]) AS v(id, text) WHERE r.id = v.id",
                   ToPgIntArray(late_ids), ToPgArray(late_texts));
    }
    std::vector<int64_t> ids;
    std::vector<int> statuses, codes;
    std::vector<std::string> messages, answer_suffixes;
    std::vector<absl::optional<absl::Time>> starts, ends, answer_times;
    for (const v1::RunResult& r : results) {
      auto d = disposition.find(r.run_id());
      if (d == disposition.end() || d->second != ResultDisposition::kRecorded) continue;
      const bool has_start =
          r.has_start_time() && (r.start_time().seconds() != 0 || r.start_time().nanos() != 0);
      const bool has_end =
          r.has_end_time() && (r.end_time().seconds() != 0 || r.end_time().nanos() != 0);
      ids.push_back(r.run_id());
      statuses.push_back(static_cast<int>(r.status()));
      codes.push_back(r.code());
      messages.push_back(r.message());
      starts.push_back(has_start ? absl::optional<absl::Time>(FromProto(r.start_time()))
                                 : absl::nullopt);
      ends.push_back(has_end ? FromProto(r.end_time()) : now);
      auto answer = answer_of.find(r.run_id());
      if (answer != answer_of.end()) {
        answer_suffixes.push_back(answer->second->message_suffix);
        answer_times.push_back(answer->second->at);
      } else {
        answer_suffixes.emplace_back();
        answer_times.push_back(absl::nullopt);
      }
    }
    if (!ids.empty()) {
      ExecPrepared(tx, "record_results", RecordResultsSql(), ToPgIntArray(ids),
                   ToPgIntArray(statuses), ToPgIntArray(codes), ToPgArray(messages),
                   ToPgTimeArray(starts), ToPgTimeArray(ends), ToPgArray(answer_suffixes),
                   ToPgTimeArray(answer_times));
    }
    tx.commit();
    records.reserve(results.size());
    for (const v1::RunResult& r : results) {
      auto d = disposition.find(r.run_id());
      records.push_back(
          ResultRecord{r.run_id(), d == disposition.end() ? ResultDisposition::kUnknown : d->second,
                       r.status()});
    }
  });
  if (!status.ok()) return status;
  return records;
}

}  // namespace jobwheel::dispatcher
