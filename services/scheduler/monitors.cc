#include "services/scheduler/monitors.h"

#include <vector>

#include "common/pg/pg_arrays.h"
#include "common/time/proto_time.h"
#include "services/scheduler/job_row.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {
namespace {

constexpr int kSucceeded = jobwheel::v1::RUN_STATUS_SUCCEEDED;
constexpr int kFailed = jobwheel::v1::RUN_STATUS_FAILED;
constexpr int kTimedOut = jobwheel::v1::RUN_STATUS_TIMED_OUT;
constexpr int kLost = jobwheel::v1::RUN_STATUS_LOST;

}  // namespace

Monitors::Monitors(Options options, LeaderElector& elector, Alarm& alarm, const Clock& clock,
                   SchedulerMetrics& metrics)
    : options_(options), elector_(elector), alarm_(alarm), clock_(clock), metrics_(metrics) {}

Monitors::~Monitors() { Shutdown(); }

void Monitors::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Monitors::Shutdown() {
  if (!thread_.joinable()) return;
  stop_.Notify();
  thread_.join();
}

void Monitors::Loop() {
  absl::Time last_retention = absl::Now();
  while (!stop_.WaitForNotificationWithTimeout(options_.interval)) {
    if (!elector_.is_leader()) {
      metrics_.jobs.Set(0);  // Only the leader counts enabled jobs.
      continue;
    }
    auto counts = RunOnce();
    if (!counts.ok() && counts.status().code() != absl::StatusCode::kFailedPrecondition) {
      spdlog::warn("monitors: {}", counts.status().ToString());
    }
    if (absl::Now() - last_retention >= options_.retention_interval) {
      last_retention = absl::Now();
      auto deleted = Retain();
      if (deleted.ok() && *deleted > 0) spdlog::info("retention: deleted {} rows", *deleted);
    }
  }
}

absl::StatusOr<Monitors::Counts> Monitors::RunOnce() {
  Counts counts;
  std::vector<AlarmEvent> alarms;
  const absl::Time now = clock_.Now();
  const absl::Time start = absl::Now();
  const int64_t epoch = elector_.epoch();  // Not inside RunFenced: it holds the elector's lock.
  int64_t enabled_jobs = 0;
  absl::Status s = elector_.RunFenced("monitors", [&](pqxx::work& tx) {
    counts = Counts();
    alarms.clear();
    enabled_jobs = tx.exec1("SELECT count(*) FROM jobs WHERE enabled")[0].as<int64_t>();
    pqxx::result rows = tx.exec_params(
        "SELECT r.id, r.job_id, r.status, r.attempt, r.shard_index, r.shard_total, "
        "r.result_message, r.trigger_message, f.param, f.trigger_type, j.id IS NULL, "
        "COALESCE(j.fail_retry_count, 0), COALESCE(j.child_job_ids, '{}'), "
        "COALESCE(j.name, ''), COALESCE(j.alarm_contacts, '{}'), r.app, "
        "j.routing_strategy "
        "FROM runs r JOIN fires f ON f.id = r.fire_id LEFT JOIN jobs j ON j.id = r.job_id "
        "WHERE NOT r.followup_done AND r.status >= 3 ORDER BY r.id LIMIT $1 "
        "FOR UPDATE OF r SKIP LOCKED",
        options_.batch);
    std::vector<int64_t> done;
    std::vector<int64_t> retry_job, retry_parent, retry_attempt, retry_shard_i, retry_shard_n;
    std::vector<std::string> retry_param;
    std::vector<int64_t> child_job, child_parent, child_parent_job;
    for (const pqxx::row& r : rows) {
      const int64_t run_id = r[0].as<int64_t>();
      const int64_t job_id = r[1].as<int64_t>();
      const int status = r[2].as<int>();
      const int attempt = r[3].as<int>();
      done.push_back(run_id);
      if (r[10].as<bool>()) continue;  // Job deleted: nothing to follow up.
      const bool failed = status == kFailed || status == kTimedOut || status == kLost;
      if (failed && attempt < r[11].as<int>()) {
        retry_job.push_back(job_id);
        retry_parent.push_back(run_id);
        retry_attempt.push_back(attempt + 1);
        // A broadcast shard retries as that shard alone; other runs keep their manual shard.
        const bool broadcast = !r[16].is_null() &&
                               r[16].as<int>() == jobwheel::v1::ROUTING_STRATEGY_SHARDING_BROADCAST;
        const int shard_total = r[5].as<int>();
        retry_shard_i.push_back(broadcast || shard_total > 1 ? r[4].as<int>() : 0);
        retry_shard_n.push_back(broadcast || shard_total > 1 ? shard_total : 0);
        retry_param.push_back(r[8].is_null() ? std::string("\x01") : r[8].as<std::string>());
      } else if (failed) {
        AlarmEvent e;
        e.job_id = job_id;
        e.job_name = r[13].as<std::string>();
        e.app = r[15].as<std::string>();
        e.run_id = run_id;
        e.status = jobwheel::v1::RunStatus_Name(static_cast<jobwheel::v1::RunStatus>(status));
        e.message =
            r[6].as<std::string>().empty() ? r[7].as<std::string>() : r[6].as<std::string>();
        pqxx::array_parser p = r[14].as_array();
        for (auto it = p.get_next(); it.first != pqxx::array_parser::done; it = p.get_next()) {
          if (it.first == pqxx::array_parser::string_value) e.contacts.push_back(it.second);
        }
        alarms.push_back(std::move(e));
      } else if (status == kSucceeded) {
        pqxx::array_parser p = r[12].as_array();
        for (auto it = p.get_next(); it.first != pqxx::array_parser::done; it = p.get_next()) {
          if (it.first != pqxx::array_parser::string_value) continue;
          child_job.push_back(std::stoll(it.second));
          child_parent.push_back(run_id);
          child_parent_job.push_back(job_id);
        }
      }
    }
    if (!retry_job.empty()) {
      // "\x01" stands for "no override" so NULL survives the text array.
      std::vector<std::string> params = retry_param;
      pqxx::result ins = tx.exec_params(
          "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, param, attempt, "
          "parent_run_id, shard_index, shard_total, leader_epoch) "
          "SELECT u.job_id, now(), 5, 1, NULLIF(u.param, E'\\x01'), u.attempt, u.parent, "
          "u.si, u.sn, $7 FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[], "
          "$5::int[], $6::int[]) AS u(job_id, parent, attempt, param, si, sn) "
          "ON CONFLICT DO NOTHING RETURNING id",
          ToPgIntArray(retry_job), ToPgIntArray(retry_parent), ToPgIntArray(retry_attempt),
          ToPgArray(params), ToPgIntArray(retry_shard_i), ToPgIntArray(retry_shard_n), epoch);
      counts.retries = static_cast<int>(ins.size());
    }
    if (!child_job.empty()) {
      // A child fires in its parent's app, or in an app within the parent's child_scope (the
      // apps whoever last set its child_job_ids may operate; NULL: every app). So a child
      // moved to another app since, or named by an operator of fewer apps, does not fire there.
      pqxx::result ins = tx.exec_params(
          "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, parent_run_id, "
          "leader_epoch) SELECT u.job_id, now(), 6, 1, u.parent, $3 "
          "FROM unnest($1::bigint[], $2::bigint[], $4::bigint[]) AS u(job_id, parent, pjob) "
          "WHERE EXISTS (SELECT 1 FROM jobs c JOIN jobs p ON p.id = u.pjob WHERE c.id = u.job_id "
          "AND (c.app = p.app OR p.child_scope IS NULL OR c.app = ANY(p.child_scope))) "
          "ON CONFLICT DO NOTHING RETURNING id",
          ToPgIntArray(child_job), ToPgIntArray(child_parent), epoch,
          ToPgIntArray(child_parent_job));
      counts.children = static_cast<int>(ins.size());
    }
    if (!done.empty()) {
      tx.exec_params(
          "UPDATE runs SET followup_done = true, alarm_sent = (alarm_sent OR "
          "status IN (4, 5, 7)) WHERE id = ANY($1::bigint[])",
          ToPgIntArray(done));
    }
    counts.alarms = static_cast<int>(alarms.size());

    // Runs whose executor went offline while they ran.
    pqxx::result lost = tx.exec_params(
        "UPDATE runs r SET status = 7, end_time = now(), result_message = "
        "'executor ' || r.executor_address || ' went offline while the run was RUNNING' "
        "WHERE r.status = 2 AND r.start_time < $1::timestamptz AND NOT EXISTS ("
        "SELECT 1 FROM executors e WHERE e.app = r.app AND e.address = r.executor_address "
        "AND e.online) RETURNING r.id",
        ToPgTimestamp(now - options_.lost_after));
    counts.lost = static_cast<int>(lost.size());
    // Runs whose executor restarted while they ran: the address is online again, but its
    // process (label jobwheel.process_start_us, set by the SDK) started after the run did, so
    // nobody will report them. The new process has had `restart_grace` to replay the results
    // its predecessor spooled, which win over this.
    pqxx::result restarted = tx.exec_params(
        "UPDATE runs r SET status = 7, end_time = now(), result_message = "
        "'executor ' || r.executor_address || ' restarted while the run was RUNNING' "
        "FROM executors e WHERE r.status = 2 AND e.app = r.app AND "
        "e.address = r.executor_address AND e.online AND "
        "(e.labels->>'jobwheel.process_start_us') ~ '^[0-9]{1,18}$' AND "
        "(e.labels->>'jobwheel.process_start_us')::BIGINT > "
        "(EXTRACT(EPOCH FROM r.start_time) * 1000000)::BIGINT + 1000000 AND "
        "(e.labels->>'jobwheel.process_start_us')::BIGINT < $1 RETURNING r.id",
        absl::ToUnixMicros(now - options_.restart_grace));
    counts.lost += static_cast<int>(restarted.size());
    // Runs whose trigger never completed (their dispatcher died between commit and call).
    pqxx::result stale = tx.exec_params(
        "UPDATE runs SET status = 4, end_time = now(), result_message = "
        "'trigger never completed: the dispatcher was lost before calling the executor' "
        "WHERE status = 1 AND trigger_time < $1::timestamptz RETURNING id",
        ToPgTimestamp(now - options_.pending_timeout));
    counts.stale_pending = static_cast<int>(stale.size());
  });
  metrics_.DbQuery("monitors", absl::Now() - start, s.ok());
  if (!s.ok()) return s;
  metrics_.jobs.Set(static_cast<double>(enabled_jobs));
  metrics_.retries.Increment(counts.retries);
  metrics_.child_fires.Increment(counts.children);
  metrics_.lost_runs.Increment(counts.lost + counts.stale_pending);
  // Delivered after commit: at most one alarm per run.
  for (const AlarmEvent& e : alarms) {
    absl::Status sent = alarm_.Send(e);
    if (sent.ok()) {
      metrics_.alarms_sent.Increment();
    } else {
      metrics_.alarms_failed.Increment();
      spdlog::warn("alarm for run {} of job {}: {}", e.run_id, e.job_id, sent.ToString());
    }
  }
  return counts;
}

absl::StatusOr<int> Monitors::Retain() {
  int deleted = 0;
  const std::string cutoff = ToPgTimestamp(clock_.Now() - options_.retention);
  for (int round = 0; round < 100; ++round) {
    int n = 0;
    absl::Status s = elector_.RunFenced("retention", [&](pqxx::work& tx) {
      pqxx::result r1 = tx.exec_params(
          "DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE trigger_time < "
          "$1::timestamptz AND status >= 3 AND followup_done LIMIT 1000) RETURNING id",
          cutoff);
      pqxx::result r2 = tx.exec_params(
          "DELETE FROM fires WHERE id IN (SELECT f.id FROM fires f WHERE f.create_time < "
          "$1::timestamptz AND f.status <> 1 AND NOT EXISTS (SELECT 1 FROM runs r WHERE "
          "r.fire_id = f.id) LIMIT 1000) RETURNING id",
          cutoff);
      n = static_cast<int>(r1.size() + r2.size());
    });
    if (!s.ok()) return s;
    deleted += n;
    if (n == 0) break;
  }
  return deleted;
}

}  // namespace jobwheel::scheduler
