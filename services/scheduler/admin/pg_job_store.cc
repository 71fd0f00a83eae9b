#include "services/scheduler/admin/pg_job_store.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/pg/pg_arrays.h"
#include "common/pg/pg_audit_log.h"
#include "common/pg/pg_errors.h"
#include "common/pg/sql_enums.h"
#include "common/time/proto_time.h"
#include "pqxx/pqxx"
#include "services/scheduler/admin/audit_diff.h"
#include "services/scheduler/job_row.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::v1::Job;
using jobwheel::v1::Run;

// Transaction-level advisory lock serializing child-graph writers ("jwchild").
constexpr const char* kLockChildGraphSql = "SELECT pg_advisory_xact_lock(7667393437640804)";

// Parameters $1..$29, shared by kInsertJobSql and kUpdateJobSql.
constexpr const char* kInsertJobSql =
    "INSERT INTO jobs (app, name, description, owner, alarm_contacts, schedule_kind, "
    "cron_expression, time_zone, fix_rate_seconds, fix_rate_start, misfire_strategy, "
    "routing_strategy, block_strategy, handler, param, timeout_ms, fail_retry_count, "
    "child_job_ids, glue_type, script_source, script_version, enabled, next_fire_at, "
    "create_time, update_time, fix_delay_ms, labels, run_max_age_ms, run_keep_last) VALUES ($1, "
    "$2, $3, $4, $5::text[], $6, $7, $8, "
    "$9::bigint, $10::timestamptz, $11::int, $12::int, $13::int, $14, $15, $16::bigint, "
    "$17::int, $18::bigint[], $19::int, $20, $21::int, $22::boolean, $23::timestamptz, "
    "$24::timestamptz, $25::timestamptz, $26::bigint, $27::jsonb, $28::bigint, $29::int) "
    "RETURNING id";

constexpr const char* kUpdateJobSql =
    "UPDATE jobs SET app = $1, name = $2, description = $3, owner = $4, "
    "alarm_contacts = $5::text[], schedule_kind = $6, cron_expression = $7, time_zone = $8, "
    "fix_rate_seconds = $9::bigint, fix_rate_start = $10::timestamptz, "
    "misfire_strategy = $11::int, routing_strategy = $12::int, block_strategy = $13::int, "
    "handler = $14, param = $15, timeout_ms = $16::bigint, fail_retry_count = $17::int, "
    "child_job_ids = $18::bigint[], glue_type = $19::int, script_source = $20, "
    "script_version = $21::int, enabled = $22::boolean, next_fire_at = $23::timestamptz, "
    "create_time = $24::timestamptz, update_time = $25::timestamptz, fix_delay_ms = $26::bigint, "
    "labels = $27::jsonb, run_max_age_ms = $28::bigint, run_keep_last = $29::int, "
    // A written job has a computable schedule (the admin API checked it): any error the
    // monitors recorded for the old one is gone. A FIX_DELAY chain restarts from next_fire_at
    // (the claim does not fire it while a run of the job is open).
    "schedule_error = NULL, delay_fire_id = NULL WHERE id = $30::bigint";

constexpr const char* kRegisterAppSql =
    "INSERT INTO apps (name) VALUES ($1) ON CONFLICT (name) DO NOTHING";

constexpr const char* kInsertScriptSql =
    "INSERT INTO scripts (job_id, version, glue_type, source) "
    "VALUES ($1::bigint, $2::int, $3::int, $4)";

// The job's not-yet-dispatched schedule-driven fires not yet due when the statement runs
// (clock_timestamp(): after the write's own time, which the cut-off range ends at; the
// transaction's now() is before it, and a fire due in between would be neither run nor
// recorded), plus any at or after the new
// next_fire_at ($2, may be NULL) so the leader can re-create them without a unique conflict.
// Conditional on PENDING: a dispatcher holding the fire's row lock decides it first. The rows
// are locked in id order, as dispatchers and the leader lock fires, so a delete waits for a
// dispatcher's batch instead of deadlocking with it.
const std::string& DeleteFutureFiresSql() {
  static const std::string* text = new std::string(absl::StrCat(
      "DELETE FROM fires WHERE id IN (SELECT id FROM fires WHERE job_id = $1::bigint AND status = ",
      sql::SqlInt(v1::FIRE_STATUS_PENDING), " AND trigger_type IN ", sql::ScheduleTriggerTypesSql(),
      " AND (scheduled_at > clock_timestamp() OR scheduled_at >= $2::timestamptz) ORDER BY id FOR "
      "UPDATE)"));
  return *text;
}

// The due times a write cut off (JobWrite::cut_off): one SKIPPED row at the first of them.
// The job row is locked (FOR UPDATE) and its next_fire_at past the first, so no claim writes a
// fire at that time; a conflict with one written earlier leaves that one.
const std::string& InsertCutOffSql() {
  static const std::string* text = new std::string(absl::StrCat(
      "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, reason) VALUES ($1::bigint, "
      "$2::timestamptz, $3::int, ",
      sql::SqlInt(v1::FIRE_STATUS_SKIPPED), ", $4) ON CONFLICT DO NOTHING"));
  return *text;
}

// A deleted job's fires that no dispatcher has taken (locked in id order, as above).
const std::string& DeletePendingFiresSql() {
  static const std::string* text = new std::string(absl::StrCat(
      "DELETE FROM fires WHERE id IN (SELECT id FROM fires WHERE job_id = $1::bigint AND status = ",
      sql::SqlInt(v1::FIRE_STATUS_PENDING), " ORDER BY id FOR UPDATE)"));
  return *text;
}

// A write transaction runs up to this many times while PostgreSQL aborts it on a deadlock or a
// serialization failure (ABORTED): a deadlock with the fire path never reaches the caller.
constexpr int kWriteAttempts = 4;

absl::Status RunWrite(PgPool& pool, absl::string_view what,
                      const std::function<void(pqxx::connection&)>& fn) {
  for (int attempt = 1;; ++attempt) {
    absl::Status s = pool.Run(what, fn);
    if (s.code() != absl::StatusCode::kAborted || attempt >= kWriteAttempts) return s;
  }
}

constexpr const char* kChildParentsSql =
    "SELECT id FROM jobs WHERE $1::bigint = ANY(child_job_ids) AND id <> $1::bigint ORDER BY id";

const std::string& InsertManualFireSql() {
  static const std::string* text = new std::string(absl::StrCat(
      "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, param, shard_index, "
      "shard_total, executor_address) VALUES ($1::bigint, now(), ",
      sql::SqlInt(v1::TRIGGER_TYPE_MANUAL), ", ", sql::SqlInt(v1::FIRE_STATUS_PENDING),
      ", $2, $3::int, $4::int, $5) RETURNING id"));
  return *text;
}

constexpr const char* kOnlineExecutorSql =
    "SELECT 1 FROM executors WHERE app = $1 AND address = $2 AND online";

constexpr const char* kExecutorStateSql =
    "SELECT online FROM executors WHERE app = $1 AND address = $2";

// Conditional on the run being open: a result the dispatcher recorded first wins.
const std::string& MarkRunKilledSql() {
  static const std::string* text = new std::string(
      absl::StrCat("UPDATE runs SET status = ", sql::SqlInt(v1::RUN_STATUS_KILLED),
                   ", end_time = now(), result_message = $2 WHERE id = $1::bigint AND status IN ",
                   sql::OpenRunStatusesSql()));
  return *text;
}

std::string SelectJobSql(absl::string_view where) {
  return absl::StrCat("SELECT ", kJobAdminColumns, " FROM jobs j ", where);
}

// The labels as a JSON object (keys and values are validated to need no escaping; escaped all
// the same).
std::string LabelsJson(const google::protobuf::Map<std::string, std::string>& labels) {
  std::vector<std::pair<std::string, std::string>> sorted(labels.begin(), labels.end());
  std::sort(sorted.begin(), sorted.end());
  auto quote = [](const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out + "\"";
  };
  std::string out = "{";
  for (const auto& [k, v] : sorted) {
    absl::StrAppend(&out, out.size() > 1 ? "," : "", quote(k), ":", quote(v));
  }
  return out + "}";
}

std::string SelectRunSql(absl::string_view where) {
  return absl::StrCat("SELECT ", kRunColumns, " FROM runs r ", where);
}

std::optional<std::string> PgTime(const std::optional<absl::Time>& t) {
  if (!t) return std::nullopt;
  return ToPgTimestamp(*t);
}

// Executes `sql` with the 29 job columns of `w` as $1..$29 and `extra` after them.
template <typename... Extra>
pqxx::result ExecJobWrite(pqxx::work& tx, const char* sql, const JobWrite& w, Extra&&... extra) {
  const Job& j = w.job;
  std::string kind = sql::kScheduleKindNone;
  std::string cron_expression;
  std::string time_zone = "UTC";
  int64_t fix_rate_seconds = 0;
  int64_t fix_delay_ms = 0;
  std::optional<std::string> fix_rate_start;  // Also FIX_DELAY's start time.
  if (j.schedule().has_cron()) {
    kind = sql::kScheduleKindCron;
    cron_expression = j.schedule().cron().expression();
    time_zone = j.schedule().cron().time_zone();
  } else if (j.schedule().has_fix_rate()) {
    kind = sql::kScheduleKindFixRate;
    fix_rate_seconds = j.schedule().fix_rate().interval_seconds();
    if (j.schedule().fix_rate().has_start_time()) {
      fix_rate_start = ToPgTimestamp(FromProto(j.schedule().fix_rate().start_time()));
    }
  } else if (j.schedule().has_fix_delay()) {
    kind = sql::kScheduleKindFixDelay;
    fix_delay_ms = absl::ToInt64Milliseconds(FromProto(j.schedule().fix_delay().delay()));
    if (j.schedule().fix_delay().has_start_time()) {
      fix_rate_start = ToPgTimestamp(FromProto(j.schedule().fix_delay().start_time()));
    }
  }
  const int64_t timeout_ms = absl::ToInt64Milliseconds(FromProto(j.timeout()));
  return tx.exec_params(
      sql, j.app(), j.name(), j.description(), j.owner(), ToPgArray(j.alarm_contacts()), kind,
      cron_expression, time_zone, fix_rate_seconds, fix_rate_start,
      static_cast<int>(j.misfire_strategy()), static_cast<int>(j.routing_strategy()),
      static_cast<int>(j.block_strategy()), j.handler(), j.param(), timeout_ms,
      j.fail_retry_count(), ToPgIntArray(j.child_job_ids()), static_cast<int>(j.glue_type()),
      j.script_source(), j.script_version(), j.enabled(), PgTime(w.next_fire_at),
      ToPgTimestamp(FromProto(j.create_time())), ToPgTimestamp(FromProto(j.update_time())),
      fix_delay_ms, LabelsJson(j.labels()),
      absl::ToInt64Milliseconds(FromProto(j.run_retention().max_age())),
      j.run_retention().keep_last(), std::forward<Extra>(extra)...);
}

// Reads the child graph inside `tx` after taking the graph lock. Database errors become
// statuses here so they do not unwind through the caller's mutation.
ChildGraphReader MakeGraphReader(pqxx::work& tx) {
  return [&tx](const std::vector<int64_t>& ids) -> absl::StatusOr<ChildGraph> {
    try {
      tx.exec(kLockChildGraphSql);
      ChildGraph graph;
      for (const pqxx::row& row : tx.exec_params(
               "SELECT id, app FROM jobs WHERE id = ANY($1::bigint[])", ToPgIntArray(ids))) {
        graph.existing.insert(row[0].as<int64_t>());
        graph.app_of[row[0].as<int64_t>()] = row[1].as<std::string>();
      }
      for (const pqxx::row& row :
           tx.exec("SELECT id, child_job_ids FROM jobs WHERE cardinality(child_job_ids) > 0")) {
        std::vector<int64_t>& children = graph.children[row[0].as<int64_t>()];
        pqxx::array_parser parser = row[1].as_array();
        for (auto item = parser.get_next(); item.first != pqxx::array_parser::done;
             item = parser.get_next()) {
          if (item.first == pqxx::array_parser::string_value) {
            children.push_back(std::stoll(item.second));
          }
        }
      }
      return graph;
    } catch (const std::exception& e) {
      return PgErrorToStatus(e, "read child job graph");
    }
  };
}

absl::Status JobNotFound(int64_t id) { return JobNotFoundError(id); }

absl::Status RunNotFound(int64_t id) { return RunNotFoundError(id); }

// Writes `w` after the mutation: app registration, the row, the script version, stale fires.
void ApplyWrite(pqxx::work& tx, int64_t id, const JobWrite& w) {
  tx.exec_params(kRegisterAppSql, w.job.app());
  if (w.new_script_version) {
    tx.exec_params(kInsertScriptSql, id, w.job.script_version(),
                   static_cast<int>(w.job.glue_type()), w.job.script_source());
  }
  tx.exec_params(DeleteFutureFiresSql(), id, PgTime(w.next_fire_at));
  if (w.cut_off.has_value()) {
    tx.exec_params(InsertCutOffSql(), id, ToPgTimestamp(w.cut_off->first),
                   static_cast<int>(w.cut_off->trigger_type), w.cut_off->reason);
  }
  if (w.write_child_scope) {
    std::optional<std::string> scope;  // NULL: every app.
    if (w.child_scope.has_value()) scope = ToPgArray(*w.child_scope);
    tx.exec_params("UPDATE jobs SET child_scope = $2::text[] WHERE id = $1::bigint", id, scope);
  }
}

// Records `audit` (when set) for `target`, with the job versions before and after the change.
void Audit(pqxx::work& tx, const jobwheel::v1::AuditEvent* audit, const std::string& target,
           const Job* before, const Job* after) {
  if (audit == nullptr) return;
  jobwheel::v1::AuditEvent e = *audit;
  e.set_target(target);
  if (before != nullptr) e.add_apps(before->app());
  if (after != nullptr && (before == nullptr || after->app() != before->app())) {
    e.add_apps(after->app());
  }
  for (auto& c : DiffJobs(before, after)) *e.add_changes() = std::move(c);
  InsertAuditEvent(tx, e);
}

std::string JobTarget(int64_t id) { return absl::StrCat("job ", id); }

}  // namespace

PgJobStore::PgJobStore(PgPool& pool) : pool_(pool) {}

absl::StatusOr<Job> PgJobStore::CreateJob(const JobMutation& prepare,
                                          const jobwheel::v1::AuditEvent* audit) {
  absl::Status inner;
  Job out;
  absl::Status s = RunWrite(pool_, "create job", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    absl::StatusOr<std::optional<JobWrite>> w = prepare(nullptr, MakeGraphReader(tx));
    if (!w.ok()) {
      inner = w.status();
      return;
    }
    if (!w->has_value()) {
      inner = absl::InternalError("create job: the mutation produced no row");
      return;
    }
    const JobWrite& write = **w;
    const int64_t id = ExecJobWrite(tx, kInsertJobSql, write)[0][0].as<int64_t>();
    ApplyWrite(tx, id, write);
    out = JobFromAdminRow(tx.exec_params1(SelectJobSql("WHERE j.id = $1::bigint"), id));
    Audit(tx, audit, JobTarget(id), nullptr, &out);
    tx.commit();
  });
  if (!s.ok()) return s;
  if (!inner.ok()) return inner;
  return out;
}

absl::StatusOr<Job> PgJobStore::UpdateJob(int64_t id, const JobMutation& mutate,
                                          const jobwheel::v1::AuditEvent* audit) {
  absl::Status inner;
  Job out;
  absl::Status s = RunWrite(pool_, "update job", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    pqxx::result r = tx.exec_params(SelectJobSql("WHERE j.id = $1::bigint FOR UPDATE"), id);
    if (r.empty()) {
      inner = JobNotFound(id);
      return;
    }
    const Job current = JobFromAdminRow(r[0]);
    absl::StatusOr<std::optional<JobWrite>> w = mutate(&current, MakeGraphReader(tx));
    if (!w.ok()) {
      inner = w.status();
      return;
    }
    if (!w->has_value()) {
      out = current;
      return;  // Nothing to write; the transaction rolls back.
    }
    const JobWrite& write = **w;
    ExecJobWrite(tx, kUpdateJobSql, write, id);
    ApplyWrite(tx, id, write);
    out = JobFromAdminRow(tx.exec_params1(SelectJobSql("WHERE j.id = $1::bigint"), id));
    Audit(tx, audit, JobTarget(id), &current, &out);
    tx.commit();
  });
  if (!s.ok()) return s;
  if (!inner.ok()) return inner;
  return out;
}

absl::StatusOr<Job> PgJobStore::GetJob(int64_t id) {
  std::optional<Job> out;
  absl::Status s = pool_.Run("get job", [&](pqxx::connection& conn) {
    pqxx::read_transaction tx(conn);
    pqxx::result r = tx.exec_params(SelectJobSql("WHERE j.id = $1::bigint"), id);
    if (!r.empty()) out = JobFromAdminRow(r[0]);
  });
  if (!s.ok()) return s;
  if (!out) return JobNotFound(id);
  return *std::move(out);
}

absl::StatusOr<std::vector<Job>> PgJobStore::ListJobs(const JobFilter& filter, int64_t after_id,
                                                      int limit) {
  // ILIKE pattern with the user's %, _ and \ matched literally.
  std::string pattern;
  for (char c : filter.name_contains) {
    if (c == '%' || c == '_' || c == '\\') pattern.push_back('\\');
    pattern.push_back(c);
  }
  google::protobuf::Map<std::string, std::string> equal;
  for (const auto& [k, v] : filter.labels_equal) {
    // Two values for one key match nothing.
    auto [it, inserted] = equal.insert({k, v});
    if (!inserted && it->second != v) return std::vector<Job>();
  }
  std::vector<std::string> not_keys, not_values;
  for (const auto& [k, v] : filter.labels_not_equal) {
    not_keys.push_back(k);
    not_values.push_back(v);
  }
  std::vector<Job> out;
  absl::Status s = pool_.Run("list jobs", [&](pqxx::connection& conn) {
    pqxx::read_transaction tx(conn);
    pqxx::result r = tx.exec_params(
        SelectJobSql("WHERE j.id > $1::bigint AND ($2 = '' OR j.app = $2) "
                     "AND ($3::boolean IS NULL OR j.enabled = $3::boolean) "
                     "AND ($4 = '' OR j.name ILIKE '%' || $4 || '%' ESCAPE '\\') "
                     "AND (NOT $6::boolean OR j.app = ANY($7::text[])) "
                     // Containment uses the GIN index jobs_labels.
                     "AND j.labels @> $8::jsonb AND NOT EXISTS (SELECT 1 FROM "
                     "unnest($9::text[], $10::text[]) AS u(k, v) WHERE j.labels ->> u.k = u.v) "
                     "ORDER BY j.id LIMIT $5::int"),
        after_id, filter.app, filter.enabled, pattern, limit, filter.only_apps.has_value(),
        ToPgArray(filter.only_apps.value_or(std::vector<std::string>())), LabelsJson(equal),
        ToPgArray(not_keys), ToPgArray(not_values));
    for (const pqxx::row& row : r) out.push_back(JobFromAdminRow(row));
  });
  if (!s.ok()) return s;
  return out;
}

absl::Status PgJobStore::DeleteJob(int64_t id, const jobwheel::v1::AuditEvent* audit) {
  absl::Status inner;
  absl::Status s = RunWrite(pool_, "delete job", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    // Row lock first, then the graph lock: the same order as UpdateJob.
    pqxx::result row = tx.exec_params(SelectJobSql("WHERE j.id = $1::bigint FOR UPDATE"), id);
    if (row.empty()) {
      inner = JobNotFound(id);
      return;
    }
    const Job current = JobFromAdminRow(row[0]);
    tx.exec(kLockChildGraphSql);
    pqxx::result parents = tx.exec_params(kChildParentsSql, id);
    if (!parents.empty()) {
      std::vector<int64_t> ids;
      for (const pqxx::row& row : parents) ids.push_back(row[0].as<int64_t>());
      inner = absl::FailedPreconditionError(
          absl::StrCat("job ", id, " is a child of job(s) ", absl::StrJoin(ids, ", "),
                       "; remove it from their child_job_ids first"));
      return;
    }
    tx.exec_params(DeletePendingFiresSql(), id);
    tx.exec_params("DELETE FROM scripts WHERE job_id = $1::bigint", id);
    tx.exec_params("DELETE FROM jobs WHERE id = $1::bigint", id);
    Audit(tx, audit, JobTarget(id), &current, nullptr);
    tx.commit();
  });
  if (!s.ok()) return s;
  return inner;
}

absl::StatusOr<int64_t> PgJobStore::InsertManualFire(const ManualFire& fire,
                                                     const jobwheel::v1::AuditEvent* audit) {
  absl::Status inner;
  int64_t fire_id = 0;
  absl::Status s = RunWrite(pool_, "trigger job", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    // KEY SHARE keeps a concurrent DeleteJob from removing the job under the new fire.
    pqxx::result r =
        tx.exec_params("SELECT app FROM jobs WHERE id = $1::bigint FOR KEY SHARE", fire.job_id);
    if (r.empty()) {
      inner = JobNotFound(fire.job_id);
      return;
    }
    const std::string app = r[0][0].as<std::string>();
    if (!fire.executor_address.empty() &&
        tx.exec_params(kOnlineExecutorSql, app, fire.executor_address).empty()) {
      inner = absl::FailedPreconditionError(absl::StrCat(
          "executor_address: ", fire.executor_address, " is not an online executor of app ", app));
      return;
    }
    fire_id = tx.exec_params1(InsertManualFireSql(), fire.job_id, fire.param, fire.shard_index,
                              fire.shard_total, fire.executor_address)[0]
                  .as<int64_t>();
    if (audit != nullptr) {
      jobwheel::v1::AuditEvent e = *audit;
      e.set_target(JobTarget(fire.job_id));
      e.add_apps(app);
      auto set = [&e](const std::string& field, const std::string& value) {
        jobwheel::v1::AuditFieldChange* c = e.add_changes();
        c->set_field(field);
        c->set_after(value);
      };
      set("fire_id", absl::StrCat(fire_id));
      if (fire.param) set("param", *fire.param);
      if (fire.shard_total > 0)
        set("shard_param", absl::StrCat(fire.shard_index, "/", fire.shard_total));
      if (!fire.executor_address.empty()) set("executor_address", fire.executor_address);
      InsertAuditEvent(tx, e);
    }
    tx.commit();
  });
  if (!s.ok()) return s;
  if (!inner.ok()) return inner;
  return fire_id;
}

absl::StatusOr<std::vector<Run>> PgJobStore::ListRuns(const RunFilter& filter, int64_t before_id,
                                                      int limit) {
  std::vector<int64_t> statuses;
  for (auto st : filter.statuses) statuses.push_back(static_cast<int64_t>(st));
  std::vector<Run> out;
  absl::Status s = pool_.Run("list runs", [&](pqxx::connection& conn) {
    pqxx::read_transaction tx(conn);
    pqxx::result r = tx.exec_params(
        SelectRunSql("WHERE ($1::bigint = 0 OR r.id < $1::bigint) "
                     "AND ($2::bigint = 0 OR r.job_id = $2::bigint) "
                     "AND ($3 = '' OR r.app = $3) "
                     "AND (cardinality($4::int[]) = 0 OR r.status = ANY($4::int[])) "
                     "AND ($5::timestamptz IS NULL OR r.trigger_time >= $5::timestamptz) "
                     "AND ($6::timestamptz IS NULL OR r.trigger_time < $6::timestamptz) "
                     "AND (NOT $8::boolean OR r.app = ANY($9::text[])) "
                     "ORDER BY r.id DESC LIMIT $7::int"),
        before_id, filter.job_id, filter.app, ToPgIntArray(statuses), PgTime(filter.triggered_from),
        PgTime(filter.triggered_before), limit, filter.only_apps.has_value(),
        ToPgArray(filter.only_apps.value_or(std::vector<std::string>())));
    for (const pqxx::row& row : r) out.push_back(RunFromRow(row));
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<Run> PgJobStore::GetRun(int64_t id) {
  std::optional<Run> out;
  absl::Status s = pool_.Run("get run", [&](pqxx::connection& conn) {
    pqxx::read_transaction tx(conn);
    pqxx::result r = tx.exec_params(SelectRunSql("WHERE r.id = $1::bigint"), id);
    if (!r.empty()) out = RunFromRow(r[0]);
  });
  if (!s.ok()) return s;
  if (!out) return RunNotFound(id);
  return *std::move(out);
}

absl::StatusOr<ExecutorState> PgJobStore::GetExecutorState(const std::string& app,
                                                           const std::string& address) {
  ExecutorState state = ExecutorState::kUnknown;
  absl::Status s = pool_.Run("get executor", [&](pqxx::connection& conn) {
    pqxx::read_transaction tx(conn);
    pqxx::result r = tx.exec_params(kExecutorStateSql, app, address);
    if (!r.empty()) state = r[0][0].as<bool>() ? ExecutorState::kOnline : ExecutorState::kOffline;
  });
  if (!s.ok()) return s;
  return state;
}

absl::StatusOr<Run> PgJobStore::MarkRunKilled(int64_t id, const std::string& message,
                                              const jobwheel::v1::AuditEvent* audit) {
  std::optional<Run> out;
  absl::Status s = RunWrite(pool_, "kill run", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    const bool killed = tx.exec_params(MarkRunKilledSql(), id, message).affected_rows() > 0;
    pqxx::result r = tx.exec_params(SelectRunSql("WHERE r.id = $1::bigint"), id);
    if (!r.empty()) out = RunFromRow(r[0]);
    if (killed && out && audit != nullptr) {
      jobwheel::v1::AuditEvent e = *audit;
      e.set_target(absl::StrCat("run ", id));
      e.add_apps(out->app());
      jobwheel::v1::AuditFieldChange* c = e.add_changes();
      c->set_field("status");
      c->set_after("RUN_STATUS_KILLED");
      InsertAuditEvent(tx, e);
    }
    tx.commit();
  });
  if (!s.ok()) return s;
  if (!out) return RunNotFound(id);
  return *std::move(out);
}

}  // namespace jobwheel::scheduler::admin

namespace jobwheel::scheduler::admin {

absl::Status PgJobStore::AppendAudit(const jobwheel::v1::AuditEvent& audit) {
  return pool_.Run("append audit event", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    InsertAuditEvent(tx, audit);
    tx.commit();
  });
}

absl::StatusOr<std::vector<jobwheel::v1::AuditEvent>> PgJobStore::ListAuditEvents(
    const AuditFilter& filter, int64_t before_id, int limit) {
  std::vector<jobwheel::v1::AuditEvent> out;
  absl::Status s = pool_.Run("list audit events", [&](pqxx::connection& conn) {
    pqxx::read_transaction tx(conn);
    out = SelectAuditEvents(tx, filter, before_id, limit);
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace jobwheel::scheduler::admin
