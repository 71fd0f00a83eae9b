#include "services/scheduler/pg_monitor_pass.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/pg/pg_arrays.h"
#include "common/pg/pg_prepared.h"
#include "common/pg/sql_enums.h"
#include "common/time/proto_time.h"
#include "services/scheduler/alarm_outbox_pg.h"
#include "services/scheduler/job_row.h"

namespace jobwheel::scheduler {
namespace {

using jobwheel::v1::Job;

// Calls `add` with each non-NULL element of a one-dimensional array column.
template <typename Add>
void ForEachArrayValue(const pqxx::field& f, Add add) {
  pqxx::array_parser p = f.as_array();
  for (auto it = p.get_next(); it.first != pqxx::array_parser::done; it = p.get_next()) {
    if (it.first == pqxx::array_parser::string_value) add(it.second);
  }
}

// The UPDATE that ends RUNNING runs as LOST ("executor <address> <what> while the run was
// RUNNING") where `condition` holds, with their executor row as `e` when `join_executor`;
// returns id, app, executor_address and then `extra_returned`.
std::string LoseRunsSql(absl::string_view what, bool join_executor, absl::string_view condition,
                        absl::string_view extra_returned = "") {
  const std::string running = sql::SqlInt(v1::RUN_STATUS_RUNNING);
  return absl::StrCat(
      "UPDATE runs r SET status = ", sql::SqlInt(v1::RUN_STATUS_LOST),
      ", end_time = now(), result_message = 'executor ' || r.executor_address || ' ", what,
      " while the run was RUNNING'",
      join_executor ? absl::StrCat(" FROM executors e WHERE r.status = ", running,
                                   " AND e.app = r.app AND e.address = r.executor_address AND ")
                    : absl::StrCat(" WHERE r.status = ", running, " AND "),
      condition, " RETURNING r.id, r.app, r.executor_address", extra_returned);
}

}  // namespace

void PgMonitorPass::EndLostRuns(FireStore::MonitorResult& result) {
  using LostReason = FireStore::LostReason;
  auto add = [&](const pqxx::result& rows, LostReason reason) {
    for (const pqxx::row& r : rows) {
      FireStore::LostRun run;
      run.run_id = r[0].as<int64_t>();
      run.app = r[1].as<std::string>();
      run.executor_address = r[2].as<std::string>();
      run.reason = reason;
      if (rows.columns() > 3 && !r[3].is_null()) {
        run.after_offline = absl::Microseconds(r[3].as<int64_t>());
      }
      result.lost_runs.push_back(std::move(run));
    }
  };
  // Built once: the monitor pass runs every second.
  // Runs whose executor the registry took offline at least the grace ago (the same process
  // reconnecting within it finds the row online again), however recently they started.
  static const std::string* const kOffline = new std::string(LoseRunsSql(
      "went offline", true,
      "NOT e.online AND e.offline_since <= now() - $1::bigint * interval '1 microsecond'",
      ", (EXTRACT(EPOCH FROM (now() - e.offline_since)) * 1000000)::BIGINT"));
  // Runs on an executor not online that tells no offline time (no row, or taken offline
  // before executors.offline_since existed): after the long limit.
  static const std::string* const kOfflineUnknown = new std::string(LoseRunsSql(
      "went offline", false,
      "r.start_time < $1::timestamptz AND NOT EXISTS (SELECT 1 FROM executors e WHERE "
      "e.app = r.app AND e.address = r.executor_address AND (e.online OR e.offline_since IS "
      "NOT NULL))"));
  // Runs whose executor restarted while they ran: the address is online again with another
  // process, registered (instance_since) more than a second after the run started (start times
  // may come from the executor's clock), so nobody will report them. The new process has had
  // its grace to replay the results its predecessor spooled, which win over this.
  static const std::string* const kRestarted = new std::string(
      LoseRunsSql("restarted", true,
                  "e.online AND r.start_time + interval '1 second' < e.instance_since AND "
                  "e.instance_since <= now() - $1::bigint * interval '1 microsecond'"));
  // The same for rows registered before instance_since existed, by the process start time
  // the SDK sets as label jobwheel.process_start_us.
  static const std::string* const kRestartedLabel = new std::string(
      LoseRunsSql("restarted", true,
                  "e.online AND (e.labels->>'jobwheel.process_start_us') ~ '^[0-9]{1,18}$' AND "
                  "(e.labels->>'jobwheel.process_start_us')::BIGINT > "
                  "(EXTRACT(EPOCH FROM r.start_time) * 1000000)::BIGINT + 1000000 AND "
                  "(e.labels->>'jobwheel.process_start_us')::BIGINT < $1"));
  add(ExecPrepared(tx_, "lose_runs_offline", *kOffline,
                   absl::ToInt64Microseconds(limits_.offline_grace)),
      LostReason::kExecutorOffline);
  add(ExecPrepared(tx_, "lose_runs_offline_unknown", *kOfflineUnknown,
                   ToPgTimestamp(limits_.lost_started_before)),
      LostReason::kExecutorOffline);
  add(ExecPrepared(tx_, "lose_runs_restarted", *kRestarted,
                   absl::ToInt64Microseconds(limits_.restart_grace)),
      LostReason::kExecutorRestarted);
  add(ExecPrepared(tx_, "lose_runs_restarted_label", *kRestartedLabel,
                   absl::ToUnixMicros(limits_.restarted_before)),
      LostReason::kExecutorRestarted);
  result.lost = static_cast<int>(result.lost_runs.size());
}

FireStore::MonitorResult PgMonitorPass::Run(const FireStore::FollowupPlanner& plan) {
  FireStore::MonitorResult result;
  result.enabled_jobs = tx_.exec1("SELECT count(*) FROM jobs WHERE enabled")[0].as<int64_t>();
  // Lost runs first: the follow-ups below then see them (a retry is written at once).
  EndLostRuns(result);
  const std::vector<FinishedRun> runs = LockFinishedRuns();
  const std::vector<Job> unscheduled = LockUnscheduledJobs();
  const FollowupPlan& planned = plan(runs, unscheduled);
  if (!planned.retries.empty()) result.retries = WriteRetries(planned.retries);
  if (!planned.children.empty()) result.children = WriteChildren(planned.children);
  if (!planned.done.empty()) MarkFollowedUp(planned.done);
  if (!planned.stops.empty()) result.stopped_jobs = StopJobs(planned.stops);
  // Queued, never sent here: AlarmSender delivers them after this commits.
  result.alarms_queued = QueueAlarms(tx_, planned.alarms);
  result.stale_pending = FailStalePending();
  return result;
}

std::vector<FinishedRun> PgMonitorPass::LockFinishedRuns() {
  pqxx::result rows = tx_.exec_params(
      "SELECT r.id, r.job_id, r.status, r.attempt, r.shard_index, r.shard_total, "
      "r.result_message, r.trigger_message, f.param, f.trigger_type, j.id IS NULL, "
      "COALESCE(j.fail_retry_count, 0), COALESCE(j.child_job_ids, '{}'), "
      "COALESCE(j.name, ''), COALESCE(j.alarm_contacts, '{}'), r.app, "
      "j.routing_strategy, r.executor_address, "
      "(EXTRACT(EPOCH FROM r.trigger_time) * 1000000)::BIGINT "
      "FROM runs r JOIN fires f ON f.id = r.fire_id LEFT JOIN jobs j ON j.id = r.job_id "
      "WHERE NOT r.followup_done AND r.status >= " +
          sql::FirstTerminalRunStatusSql() +
          " ORDER BY r.id LIMIT $1 "
          "FOR UPDATE OF r SKIP LOCKED",
      limits_.batch);
  std::vector<FinishedRun> runs;
  runs.reserve(rows.size());
  for (const pqxx::row& r : rows) {
    FinishedRun run;
    run.run_id = r[0].as<int64_t>();
    run.job_id = r[1].as<int64_t>();
    run.status = static_cast<jobwheel::v1::RunStatus>(r[2].as<int>());
    run.attempt = r[3].as<int>();
    run.shard_index = r[4].as<int>();
    run.shard_total = r[5].as<int>();
    run.result_message = r[6].as<std::string>();
    run.trigger_message = r[7].as<std::string>();
    if (!r[8].is_null()) run.fire_param = r[8].as<std::string>();
    run.job_deleted = r[10].as<bool>();
    run.fail_retry_count = r[11].as<int>();
    ForEachArrayValue(r[12],
                      [&](const std::string& v) { run.child_job_ids.push_back(std::stoll(v)); });
    run.job_name = r[13].as<std::string>();
    ForEachArrayValue(r[14], [&](const std::string& v) { run.alarm_contacts.push_back(v); });
    run.app = r[15].as<std::string>();
    if (!r[16].is_null()) {
      run.routing_strategy = static_cast<jobwheel::v1::RoutingStrategy>(r[16].as<int>());
    }
    run.executor_address = r[17].as<std::string>();
    if (!r[18].is_null()) run.trigger_time = FromMicros(r[18].as<int64_t>());
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<Job> PgMonitorPass::LockUnscheduledJobs() {
  // Enabled jobs that fire on their own but have no next fire time: the claim found their
  // stored schedule invalid (or it ended).
  pqxx::result rows = tx_.exec_params(
      absl::StrCat("SELECT ", kJobColumns,
                   " FROM jobs j WHERE j.enabled AND j.next_fire_at IS NULL AND "
                   "j.schedule_kind <> 'NONE' AND j.schedule_error IS NULL AND "
                   // A FIX_DELAY job waiting for its fire has no next fire time on purpose.
                   "j.delay_fire_id IS NULL ORDER BY j.id "
                   "LIMIT $1 FOR UPDATE OF j SKIP LOCKED"),
      limits_.batch);
  std::vector<Job> unscheduled;
  unscheduled.reserve(rows.size());
  for (const pqxx::row& row : rows) unscheduled.push_back(JobFromRow(row));
  return unscheduled;
}

int PgMonitorPass::WriteRetries(const std::vector<RetryFire>& retries) {
  std::vector<int64_t> job, parent, attempt, shard_i, shard_n;
  // "\x01" stands for "no override" so NULL survives the text array.
  std::vector<std::string> params;
  for (const RetryFire& f : retries) {
    job.push_back(f.job_id);
    parent.push_back(f.parent_run_id);
    attempt.push_back(f.attempt);
    shard_i.push_back(f.shard_index);
    shard_n.push_back(f.shard_total);
    params.push_back(f.param.value_or(std::string("\x01")));
  }
  pqxx::result ins = tx_.exec_params(
      "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, param, attempt, "
      "parent_run_id, shard_index, shard_total, leader_epoch) "
      "SELECT u.job_id, now(), " +
          sql::SqlInt(v1::TRIGGER_TYPE_RETRY) + ", " + sql::SqlInt(v1::FIRE_STATUS_PENDING) +
          ", NULLIF(u.param, E'\\x01'), u.attempt, u.parent, "
          "u.si, u.sn, $7 FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[], "
          "$5::int[], $6::int[]) AS u(job_id, parent, attempt, param, si, sn) "
          "ON CONFLICT DO NOTHING RETURNING id",
      ToPgIntArray(job), ToPgIntArray(parent), ToPgIntArray(attempt), ToPgArray(params),
      ToPgIntArray(shard_i), ToPgIntArray(shard_n), epoch_);
  // A FIX_DELAY job waiting for the failed run waits for its retry instead.
  std::vector<int64_t> retry_ids;
  retry_ids.reserve(ins.size());
  for (const pqxx::row& r : ins) retry_ids.push_back(r[0].as<int64_t>());
  tx_.exec_params(
      "UPDATE jobs j SET delay_fire_id = f.id FROM fires f WHERE f.id = ANY($1::bigint[]) "
      "AND j.id = f.job_id AND j.delay_fire_id IS NOT NULL",
      ToPgIntArray(retry_ids));
  return static_cast<int>(ins.size());
}

int PgMonitorPass::WriteChildren(const std::vector<ChildFire>& children) {
  std::vector<int64_t> job, parent, parent_job;
  for (const ChildFire& f : children) {
    job.push_back(f.job_id);
    parent.push_back(f.parent_run_id);
    parent_job.push_back(f.parent_job_id);
  }
  // A child fires in its parent's app, or in an app within the parent's child_scope (the
  // apps whoever last set its child_job_ids may operate; NULL: every app). So a child
  // moved to another app since, or named by an operator of fewer apps, does not fire there.
  pqxx::result ins = tx_.exec_params(
      "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, parent_run_id, "
      "leader_epoch) SELECT u.job_id, now(), " +
          sql::SqlInt(v1::TRIGGER_TYPE_PARENT) + ", " + sql::SqlInt(v1::FIRE_STATUS_PENDING) +
          ", u.parent, $3 "
          "FROM unnest($1::bigint[], $2::bigint[], $4::bigint[]) AS u(job_id, parent, pjob) "
          "WHERE EXISTS (SELECT 1 FROM jobs c JOIN jobs p ON p.id = u.pjob WHERE c.id = "
          "u.job_id "
          "AND (c.app = p.app OR p.child_scope IS NULL OR c.app = ANY(p.child_scope))) "
          "ON CONFLICT DO NOTHING RETURNING id",
      ToPgIntArray(job), ToPgIntArray(parent), epoch_, ToPgIntArray(parent_job));
  return static_cast<int>(ins.size());
}

void PgMonitorPass::MarkFollowedUp(const std::vector<int64_t>& run_ids) {
  tx_.exec_params("UPDATE runs SET followup_done = true, alarm_sent = (alarm_sent OR status IN " +
                      sql::FailedRunStatusesSql() + ") WHERE id = ANY($1::bigint[])",
                  ToPgIntArray(run_ids));
}

int PgMonitorPass::StopJobs(const std::vector<ScheduleStop>& stops) {
  std::vector<int64_t> ids;
  std::vector<std::string> errors;
  for (const ScheduleStop& stop : stops) {
    ids.push_back(stop.job_id);
    errors.push_back(stop.error);
  }
  pqxx::result stopped = tx_.exec_params(
      "UPDATE jobs SET enabled = false, next_fire_at = NULL, schedule_error = u.err "
      "FROM unnest($1::bigint[], $2::text[]) AS u(id, err) WHERE jobs.id = u.id "
      "RETURNING jobs.id",
      ToPgIntArray(ids), ToPgArray(errors));
  return static_cast<int>(stopped.size());
}

int PgMonitorPass::FailStalePending() {
  // Runs whose trigger never completed (their dispatcher died between commit and call).
  pqxx::result stale = tx_.exec_params(
      "UPDATE runs SET status = " + sql::SqlInt(v1::RUN_STATUS_FAILED) +
          ", end_time = now(), result_message = "
          "'trigger never completed: the dispatcher was lost before calling the executor' "
          "WHERE status = " +
          sql::SqlInt(v1::RUN_STATUS_PENDING) + " AND trigger_time < $1::timestamptz RETURNING id",
      ToPgTimestamp(limits_.pending_before));
  return static_cast<int>(stale.size());
}

}  // namespace jobwheel::scheduler
