#include "services/dispatcher/pg_dispatch_store.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/proto_time.h"
#include "pqxx/pqxx"

namespace jobwheel::dispatcher {
namespace {

// Rows per multi-row statement.
constexpr size_t kChunk = 1000;

// Trigger answers and executor results update overlapping sets of runs from different
// connections; taking the row locks in id order first keeps them from deadlocking.
template <typename Items, typename IdOf>
void LockRunsInIdOrder(pqxx::work& tx, const Items& items, IdOf id_of) {
  std::vector<int64_t> ids;
  ids.reserve(items.size());
  for (const auto& item : items) ids.push_back(id_of(item));
  tx.exec(absl::StrCat("SELECT 1 FROM runs WHERE id = ANY('{", absl::StrJoin(ids, ","),
                       "}'::bigint[]) ORDER BY id FOR UPDATE"));
}

std::string Ts(pqxx::work& tx, absl::Time t) {
  return absl::StrCat(tx.quote(ToPgTimestamp(t)), "::timestamptz");
}

std::string IdList(const std::vector<int64_t>& ids) { return absl::StrJoin(ids, ","); }

bool IsTerminal(int status) { return status >= v1::RUN_STATUS_SUCCEEDED; }

// A quoted text[] literal for `scope` (empty when unscoped; then unused).
std::string ScopeArray(pqxx::work& tx, const AppScope& scope) {
  std::string literal = "{";
  if (scope.has_value()) {
    for (size_t i = 0; i < scope->size(); ++i) {
      if (i > 0) literal += ',';
      literal += '"';
      for (char c : (*scope)[i]) {
        if (c == '"' || c == '\\') literal += '\\';
        literal += c;
      }
      literal += '"';
    }
  }
  literal += "}";
  return absl::StrCat(tx.quote(literal), "::text[]");
}

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
    for (const auto& r : tx.exec(absl::StrCat(
             "SELECT id, job_id, status, reason FROM fires WHERE id IN (", IdList(ids),
             ") ORDER BY id FOR UPDATE"))) {
      rows[r[0].as<int64_t>()] = Row{r[1].as<int64_t>(), r[2].as<int>(), r[3].as<std::string>()};
    }

    // Decide every fire; a fire id repeated in the batch is handled once.
    absl::flat_hash_map<int64_t, size_t> first_index;
    std::vector<int64_t> lookup_runs;  // Fires whose existing runs we report.
    std::vector<std::string> run_values;
    std::vector<std::string> fire_values;
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
        out.message = row->second.reason.empty()
                          ? absl::StrCat("fire ", f.fire_id(), ": already ",
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
      for (PlannedRun& run : p.runs) {
        const bool failed = run.status != v1::RUN_STATUS_PENDING;
        run_values.push_back(absl::StrCat(
            "(", f.fire_id(), ",", job.id(), ",", tx.quote(job.app()), ",", tx.quote(job.handler()),
            ",", static_cast<int>(f.trigger_type()), ",", f.attempt(), ",", run.shard_index, ",",
            run.shard_total, ",", tx.quote(run.executor_address), ",",
            static_cast<int>(job.routing_strategy() == v1::ROUTING_STRATEGY_UNSPECIFIED
                                 ? v1::ROUTING_STRATEGY_FIRST
                                 : job.routing_strategy()),
            ",", static_cast<int>(run.status), ",", tx.quote(run.trigger_message), ",",
            tx.quote(param), ",", Ts(tx, FromProto(f.scheduled_time())), ",", Ts(tx, now), ",",
            failed ? Ts(tx, now) : std::string("NULL::timestamptz"), ")"));
        out.created.push_back(CreatedRun{0, run});
      }
      fire_values.push_back(absl::StrCat("(", f.fire_id(), "::bigint,", static_cast<int>(p.status),
                                         ",", tx.quote(p.reason), "::text)"));
    }

    // Insert runs; map returned ids back to (fire, shard).
    absl::flat_hash_map<std::pair<int64_t, int32_t>, int64_t> inserted_ids;
    for (size_t start = 0; start < run_values.size(); start += kChunk) {
      const size_t end = std::min(run_values.size(), start + kChunk);
      std::string sql =
          "INSERT INTO runs (fire_id, job_id, app, handler, trigger_type, attempt, shard_index, "
          "shard_total, executor_address, routing_strategy, status, trigger_message, param, "
          "scheduled_time, trigger_time, end_time) VALUES ";
      for (size_t k = start; k < end; ++k) {
        if (k > start) sql += ",";
        sql += run_values[k];
      }
      sql += " ON CONFLICT (fire_id, shard_index) DO NOTHING RETURNING id, fire_id, shard_index";
      for (const auto& r : tx.exec(sql)) {
        inserted_ids[{r[1].as<int64_t>(), r[2].as<int32_t>()}] = r[0].as<int64_t>();
      }
    }
    for (size_t start = 0; start < fire_values.size(); start += kChunk) {
      const size_t end = std::min(fire_values.size(), start + kChunk);
      std::string sql =
          // The scheduler's reason (e.g. a misfire's count and range) is kept; a dispatch
          // failure's reason is appended to it.
          "UPDATE fires f SET status = v.status, reason = CASE WHEN v.reason = '' THEN "
          "f.reason WHEN f.reason = '' THEN v.reason ELSE f.reason || '; ' || v.reason END, "
          "dispatch_time = " +
          Ts(tx, now) + " FROM (VALUES ";
      for (size_t k = start; k < end; ++k) {
        if (k > start) sql += ",";
        sql += fire_values[k];
      }
      sql += ") AS v(id, status, reason) WHERE f.id = v.id";
      tx.exec(sql);
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
      for (const auto& r : tx.exec(absl::StrCat(
               "SELECT fire_id, id FROM runs WHERE fire_id IN (", IdList(lookup_runs),
               ") ORDER BY fire_id, shard_index"))) {
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
    LockRunsInIdOrder(tx, outcomes, [](const TriggerOutcome& o) { return o.run_id; });
    for (size_t start = 0; start < outcomes.size(); start += kChunk) {
      const size_t end = std::min(outcomes.size(), start + kChunk);
      std::string sql =
          "UPDATE runs r SET "
          "status = CASE WHEN r.status = 1 THEN v.status ELSE r.status END, "
          "start_time = CASE WHEN r.status = 1 AND v.status = 2 "
          "THEN COALESCE(r.start_time, v.at) ELSE r.start_time END, "
          "end_time = CASE WHEN r.status = 1 AND v.status <> 2 THEN v.at ELSE r.end_time END, "
          "trigger_message = r.trigger_message || v.msg "
          "FROM (VALUES ";
      for (size_t k = start; k < end; ++k) {
        const TriggerOutcome& o = outcomes[k];
        if (k > start) sql += ",";
        absl::StrAppend(&sql, "(", o.run_id, "::bigint,", static_cast<int>(o.status), "::int,",
                        tx.quote(o.message_suffix), "::text,", Ts(tx, o.at), ")");
      }
      sql += ") AS v(id, status, msg, at) WHERE r.id = v.id RETURNING r.id, r.status, v.status";
      for (const auto& r : tx.exec(sql)) {
        const int new_status = r[1].as<int>();
        if (IsTerminal(new_status) && new_status == r[2].as<int>()) {
          finished.push_back(r[0].as<int64_t>());
        }
      }
    }
    tx.commit();
  });
  if (!status.ok()) return status;
  return finished;
}

absl::StatusOr<std::vector<ResultRecord>> PgDispatchStore::RecordResults(
    const std::vector<v1::RunResult>& results, absl::Time now, const AppScope& scope) {
  std::vector<ResultRecord> records;
  absl::Status status = pool_.Run("record_results", [&](pqxx::connection& conn) {
    records.clear();
    if (results.empty()) return;
    pqxx::work tx(conn);
    LockRunsInIdOrder(tx, results, [](const v1::RunResult& r) { return r.run_id(); });
    absl::flat_hash_map<int64_t, ResultDisposition> disposition;
    for (size_t start = 0; start < results.size(); start += kChunk) {
      const size_t end = std::min(results.size(), start + kChunk);
      std::string values;
      for (size_t k = start; k < end; ++k) {
        const v1::RunResult& r = results[k];
        const bool has_start = r.has_start_time() &&
                               (r.start_time().seconds() != 0 || r.start_time().nanos() != 0);
        const bool has_end =
            r.has_end_time() && (r.end_time().seconds() != 0 || r.end_time().nanos() != 0);
        if (k > start) values += ",";
        absl::StrAppend(&values, "(", r.run_id(), "::bigint,", static_cast<int>(r.status()),
                        "::int,", r.code(), "::int,", tx.quote(r.message()), "::text,",
                        has_start ? Ts(tx, FromProto(r.start_time())) : "NULL::timestamptz", ",",
                        has_end ? Ts(tx, FromProto(r.end_time())) : Ts(tx, now), ")");
      }
      // One round trip: update what is still open (and in scope), and tell recorded /
      // duplicate / unknown / forbidden.
      const std::string in_scope = scope.has_value()
                                       ? absl::StrCat("= ANY(", ScopeArray(tx, scope), ")")
                                       : std::string("IS NOT NULL");
      const std::string sql = absl::StrCat(
          "WITH v(id, status, code, msg, st, et) AS (VALUES ", values,
          "), upd AS (UPDATE runs r SET status = v.status, result_code = v.code, "
          "result_message = v.msg, start_time = COALESCE(v.st, r.start_time, v.et), "
          "end_time = v.et FROM v WHERE r.id = v.id AND r.status IN (1, 2) AND r.app ", in_scope,
          " RETURNING r.id) "
          "SELECT v.id, (u.id IS NOT NULL), (x.id IS NOT NULL), "
          "(x.id IS NOT NULL AND NOT (x.app ", in_scope, ")) FROM v "
          "LEFT JOIN upd u ON u.id = v.id LEFT JOIN runs x ON x.id = v.id");
      for (const auto& row : tx.exec(sql)) {
        const int64_t id = row[0].as<int64_t>();
        disposition[id] = row[3].as<bool>()   ? ResultDisposition::kForbidden
                          : row[1].as<bool>() ? ResultDisposition::kRecorded
                          : row[2].as<bool>() ? ResultDisposition::kDuplicate
                                              : ResultDisposition::kUnknown;
      }
    }
    tx.commit();
    records.reserve(results.size());
    for (const v1::RunResult& r : results) {
      records.push_back(ResultRecord{r.run_id(), disposition[r.run_id()], r.status()});
    }
  });
  if (!status.ok()) return status;
  return records;
}

}  // namespace jobwheel::dispatcher
