#include "services/scheduler/pg_fire_store.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/pg/pg_arrays.h"
#include "common/pg/pg_audit_log.h"
#include "common/pg/pg_prepared.h"
#include "common/pg/sql_enums.h"
#include "common/time/proto_time.h"
#include "services/scheduler/alarm_outbox_pg.h"
#include "services/scheduler/delay_chain_sql.h"
#include "services/scheduler/job_row.h"
#include "services/scheduler/pg_monitor_pass.h"

namespace jobwheel::scheduler {
namespace {

using jobwheel::v1::Fire;
using jobwheel::v1::Job;

constexpr int kFirePending = v1::FIRE_STATUS_PENDING;
constexpr int kFireSkipped = v1::FIRE_STATUS_SKIPPED;

// Fires of deleted jobs found pending: failed with the reason.
const std::string& FailOrphanFiresSql() {
  static const std::string* s = new std::string(
      absl::StrCat("UPDATE fires SET status = ", sql::SqlInt(v1::FIRE_STATUS_FAILED),
                   ", reason = 'job was deleted before dispatch', dispatch_time = now() WHERE id = "
                   "ANY($1::bigint[]) AND status = ",
                   sql::SqlInt(v1::FIRE_STATUS_PENDING)));
  return *s;
}

constexpr char kPendingFiresSql[] =
    "SELECT f.id, f.job_id, (EXTRACT(EPOCH FROM f.scheduled_at) * 1000000)::BIGINT, "
    "f.trigger_type, f.param, f.shard_index, f.shard_total, f.executor_address, f.attempt, "
    "j.id IS NULL, ";

// Applies a late-fire plan to PENDING rows (a row no longer PENDING is left alone): skipped ones
// become SKIPPED, a fired-once one a MISFIRE fire, each with its reason.
void ApplyLatePlan(pqxx::work& tx, const LatePlan& plan) {
  std::vector<int64_t> ids, once;
  std::vector<std::string> reasons;
  for (const LateFire& f : plan.skipped) {
    ids.push_back(f.fire_id);
    once.push_back(0);
    reasons.push_back(f.reason);
  }
  for (const LateFire& f : plan.fired_once) {
    ids.push_back(f.fire_id);
    once.push_back(1);
    reasons.push_back(f.reason);
  }
  static const std::string* const kSettleSql = new std::string(absl::StrCat(
      "UPDATE fires f SET status = CASE WHEN u.once = 1 THEN ",
      sql::SqlInt(v1::FIRE_STATUS_PENDING), " ELSE ", sql::SqlInt(v1::FIRE_STATUS_SKIPPED),
      " END, trigger_type = CASE WHEN u.once = 1 THEN ", sql::SqlInt(v1::TRIGGER_TYPE_MISFIRE),
      " ELSE f.trigger_type END, reason = u.reason FROM unnest($1::bigint[], $2::int[], "
      "$3::text[]) AS u(id, once, reason) WHERE f.id = u.id AND f.status = ",
      sql::SqlInt(v1::FIRE_STATUS_PENDING)));
  ExecPrepared(tx, "settle_late_fires", *kSettleSql, ToPgIntArray(ids), ToPgIntArray(once),
               ToPgArray(reasons));
}

}  // namespace

absl::StatusOr<FireStore::ClaimResult> PgFireStore::ClaimDueJobs(absl::Time horizon, int limit,
                                                                 const ClaimPlanner& plan) {
  ClaimResult result;
  const int64_t epoch = elector_.epoch();  // Not inside RunFenced: it holds the elector's lock.
  absl::Status s = elector_.RunFenced("claim due jobs", [&](pqxx::work& tx) {
    result = ClaimResult();
    pqxx::result rows =
        ExecPrepared(tx, "claim_jobs",
                     absl::StrCat("SELECT ", kJobColumns,
                                  " FROM jobs j WHERE j.enabled AND j.next_fire_at IS NOT NULL AND "
                                  "j.next_fire_at <= $1::timestamptz ORDER BY j.next_fire_at "
                                  "LIMIT $2 FOR UPDATE SKIP LOCKED"),
                     ToPgTimestamp(horizon), limit);
    if (rows.empty()) return;
    std::vector<Job> jobs;
    jobs.reserve(rows.size());
    for (const pqxx::row& row : rows) jobs.push_back(JobFromRow(row));
    DropDelayJobsWithOpenRuns(tx, &jobs);
    result.jobs = static_cast<int>(jobs.size());
    if (jobs.empty()) return;
    const ClaimPlan& planned = plan(jobs);
    if (!planned.fires.empty()) {
      std::vector<int64_t> f_job;
      std::vector<std::optional<absl::Time>> f_time;
      std::vector<int> f_type, f_status;
      std::vector<std::string> f_reason;
      f_job.reserve(planned.fires.size());
      f_time.reserve(planned.fires.size());
      f_type.reserve(planned.fires.size());
      f_status.reserve(planned.fires.size());
      f_reason.reserve(planned.fires.size());
      for (const PlannedFire& f : planned.fires) {
        f_job.push_back(f.job_id);
        f_time.push_back(f.scheduled);
        f_type.push_back(f.trigger_type);
        f_status.push_back(f.skipped ? kFireSkipped : kFirePending);
        f_reason.push_back(f.reason);
      }
      absl::flat_hash_map<int64_t, const Job*> by_id;
      for (const Job& job : jobs) by_id.emplace(job.id(), &job);
      pqxx::result inserted = ExecPrepared(
          tx, "insert_fires",
          "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, reason, leader_epoch) "
          "SELECT u.job_id, u.scheduled_at, u.trigger_type, u.status, u.reason, $6 "
          "FROM unnest($1::bigint[], $2::timestamptz[], $3::int[], $4::int[], $5::text[]) "
          "AS u(job_id, scheduled_at, trigger_type, status, reason) "
          "ON CONFLICT DO NOTHING "
          "RETURNING id, job_id, (EXTRACT(EPOCH FROM scheduled_at) * 1000000)::BIGINT, "
          "trigger_type, status",
          ToPgIntArray(f_job), ToPgTimeArray(f_time), ToPgIntArray(f_type), ToPgIntArray(f_status),
          ToPgArray(f_reason), epoch);
      result.fires.reserve(inserted.size());
      for (const pqxx::row& r : inserted) {
        if (r[4].as<int>() != kFirePending) continue;
        Fire fire;
        fire.set_fire_id(r[0].as<int64_t>());
        auto job = by_id.find(r[1].as<int64_t>());
        if (job != by_id.end()) *fire.mutable_job() = *job->second;
        *fire.mutable_scheduled_time() = ToProto(FromMicros(r[2].as<int64_t>()));
        fire.set_trigger_type(static_cast<jobwheel::v1::TriggerType>(r[3].as<int>()));
        result.fires.push_back(std::move(fire));
      }
    }
    if (!planned.delay_chains.empty()) RecordDelayChains(tx, planned.delay_chains);
    std::vector<int64_t> n_job;
    std::vector<std::optional<absl::Time>> n_time;
    n_job.reserve(planned.next.size());
    n_time.reserve(planned.next.size());
    for (const NextFire& n : planned.next) {
      n_job.push_back(n.job_id);
      n_time.push_back(n.next);
    }
    ExecPrepared(
        tx, "advance_jobs",
        "UPDATE jobs SET next_fire_at = u.next FROM unnest($1::bigint[], $2::timestamptz[]) "
        "AS u(id, next) WHERE jobs.id = u.id AND jobs.id = ANY($1::bigint[])",
        ToPgIntArray(n_job), ToPgTimeArray(n_time));
  });
  if (!s.ok()) return s;
  return result;
}

absl::StatusOr<FireStore::PendingPage> PgFireStore::LoadPendingFires(const PendingCursor& after,
                                                                     bool all_types, int limit,
                                                                     const LatePlanner& late) {
  PendingPage page;
  const std::string after_time =
      after.scheduled == absl::InfinitePast() ? "-infinity" : ToPgTimestamp(after.scheduled);
  absl::Status s = elector_.RunFenced("load pending fires", [&](pqxx::work& tx) {
    page = PendingPage();
    page.next = after;
    std::vector<int64_t> orphans;
    pqxx::result rows = tx.exec_params(
        absl::StrCat(kPendingFiresSql, kJobColumns,
                     " FROM fires f LEFT JOIN jobs j ON j.id = f.job_id WHERE f.status = ",
                     sql::SqlInt(v1::FIRE_STATUS_PENDING),
                     // Manual, retry and child fires are written due now(): the periodic
                     // pick-up need not walk the whole pre-read window of pending fires.
                     all_types
                         ? ""
                         : absl::StrCat(" AND f.trigger_type IN ", sql::OnDemandTriggerTypesSql(),
                                        " AND f.scheduled_at <= now() + interval '1 second'"),
                     " AND (f.scheduled_at, f.id) > ($1::timestamptz, $2) "
                     "ORDER BY f.scheduled_at, f.id LIMIT $3"),
        after_time, after.id, limit);
    page.rows = rows.size();
    if (!rows.empty()) {
      const pqxx::row last = rows[rows.size() - 1];
      page.next.scheduled = FromMicros(last[2].as<int64_t>());
      page.next.id = last[0].as<int64_t>();
    }
    page.fires.reserve(rows.size());
    for (const pqxx::row& r : rows) {
      const int64_t id = r[0].as<int64_t>();
      if (r[9].as<bool>()) {
        orphans.push_back(id);
        continue;
      }
      Fire fire;
      fire.set_fire_id(id);
      *fire.mutable_scheduled_time() = ToProto(FromMicros(r[2].as<int64_t>()));
      fire.set_trigger_type(static_cast<jobwheel::v1::TriggerType>(r[3].as<int>()));
      if (!r[4].is_null()) fire.set_param(r[4].as<std::string>());
      fire.set_shard_index(r[5].as<int>());
      fire.set_shard_total(r[6].as<int>());
      fire.set_executor_address(r[7].as<std::string>());
      fire.set_attempt(r[8].as<int>());
      *fire.mutable_job() = JobFromRow(r, 10);
      page.fires.push_back(std::move(fire));
    }
    if (!orphans.empty()) {
      tx.exec_params(FailOrphanFiresSql(), ToPgIntArray(orphans));
    }
    // Fires on time cost nothing more: the plan is empty and nothing is written.
    const LatePlan& planned = late(page.fires);
    if (planned.empty()) return;
    ApplyLatePlan(tx, planned);
    absl::flat_hash_set<int64_t> skipped, once;
    for (const LateFire& f : planned.skipped) skipped.insert(f.fire_id);
    for (const LateFire& f : planned.fired_once) once.insert(f.fire_id);
    std::vector<Fire> kept;
    kept.reserve(page.fires.size() - skipped.size());
    for (Fire& f : page.fires) {
      if (skipped.contains(f.fire_id())) continue;
      if (once.contains(f.fire_id())) f.set_trigger_type(jobwheel::v1::TRIGGER_TYPE_MISFIRE);
      kept.push_back(std::move(f));
    }
    page.fires = std::move(kept);
  });
  if (!s.ok()) return s;
  return page;
}

absl::StatusOr<std::vector<int64_t>> PgFireStore::SettleLateFires(
    const std::vector<int64_t>& fire_ids, const LatePlanner& late) {
  std::vector<int64_t> pending;
  absl::Status s = elector_.RunFenced("settle late fires", [&](pqxx::work& tx) {
    pending.clear();
    // Locked in id order, as a dispatcher locks fire rows, so the two never deadlock.
    static const std::string* const kLockSql = new std::string(absl::StrCat(
        "SELECT f.id, f.job_id, (EXTRACT(EPOCH FROM f.scheduled_at) * 1000000)::BIGINT, "
        "f.trigger_type, j.misfire_strategy, j.id IS NULL FROM fires f LEFT JOIN jobs j "
        "ON j.id = f.job_id WHERE f.id = ANY($1::bigint[]) AND f.status = ",
        sql::SqlInt(v1::FIRE_STATUS_PENDING), " ORDER BY f.id FOR UPDATE OF f"));
    pqxx::result rows = ExecPrepared(tx, "lock_late_fires", *kLockSql, ToPgIntArray(fire_ids));
    std::vector<Fire> fires;
    std::vector<int64_t> orphans;
    fires.reserve(rows.size());
    for (const pqxx::row& r : rows) {
      if (r[5].as<bool>()) {
        orphans.push_back(r[0].as<int64_t>());
        continue;
      }
      Fire fire;
      fire.set_fire_id(r[0].as<int64_t>());
      fire.mutable_job()->set_id(r[1].as<int64_t>());
      *fire.mutable_scheduled_time() = ToProto(FromMicros(r[2].as<int64_t>()));
      fire.set_trigger_type(static_cast<jobwheel::v1::TriggerType>(r[3].as<int>()));
      fire.mutable_job()->set_misfire_strategy(
          static_cast<jobwheel::v1::MisfireStrategy>(r[4].as<int>()));
      fires.push_back(std::move(fire));
    }
    if (!orphans.empty()) {
      tx.exec_params(FailOrphanFiresSql(), ToPgIntArray(orphans));
    }
    const LatePlan& planned = late(fires);
    if (!planned.empty()) ApplyLatePlan(tx, planned);
    absl::flat_hash_set<int64_t> skipped;
    for (const LateFire& f : planned.skipped) skipped.insert(f.fire_id);
    for (const Fire& f : fires) {
      if (!skipped.contains(f.fire_id())) pending.push_back(f.fire_id());
    }
  });
  if (!s.ok()) return s;
  return pending;
}

absl::StatusOr<FireStore::MonitorResult> PgFireStore::RunMonitorPass(const MonitorLimits& limits,
                                                                     const FollowupPlanner& plan) {
  MonitorResult result;
  const int64_t epoch = elector_.epoch();  // Not inside RunFenced: it holds the elector's lock.
  absl::Status s = elector_.RunFenced(
      "monitors", [&](pqxx::work& tx) { result = PgMonitorPass(tx, limits, epoch).Run(plan); });
  if (!s.ok()) return s;
  return result;
}

absl::StatusOr<FireStore::DelayChainResult> PgFireStore::AdvanceDelayChains(int limit) {
  DelayChainResult result;
  absl::Status s = elector_.RunFenced(
      "delay chains", [&](pqxx::work& tx) { result = AdvanceDelayChainsIn(tx, limit); });
  if (!s.ok()) return s;
  return result;
}

absl::StatusOr<int> PgFireStore::DeleteHistory(absl::Time cutoff, int limit) {
  int n = 0;
  const std::string before = ToPgTimestamp(cutoff);
  absl::Status s = elector_.RunFenced("retention", [&](pqxx::work& tx) {
    // Jobs with a max_age of their own keep their runs for that long instead (the subquery
    // reads the few rows of the partial index jobs_own_retention).
    pqxx::result r1 = tx.exec_params(
        "DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE trigger_time < "
        "$1::timestamptz AND status >= " +
            sql::FirstTerminalRunStatusSql() +
            " AND followup_done AND job_id NOT IN (SELECT id FROM "
            "jobs WHERE run_max_age_ms > 0) LIMIT $2) RETURNING id",
        before, limit);
    // Jobs with their own retention: older than their max_age (by the database's clock), or
    // behind their keep_last newest runs.
    pqxx::result own = tx.exec_params(
        "DELETE FROM runs WHERE id IN (SELECT o.id FROM jobs j CROSS JOIN LATERAL (SELECT r.id "
        "FROM runs r WHERE r.job_id = j.id AND r.status >= " +
            sql::FirstTerminalRunStatusSql() +
            " AND r.followup_done AND ("
            "(j.run_max_age_ms > 0 AND r.trigger_time < now() - j.run_max_age_ms * "
            "interval '1 millisecond') OR (j.run_keep_last > 0 AND r.trigger_time < (SELECT "
            "r2.trigger_time FROM runs r2 WHERE r2.job_id = j.id ORDER BY r2.trigger_time DESC "
            "OFFSET j.run_keep_last - 1 LIMIT 1))) LIMIT $1) AS o "
            "WHERE j.run_max_age_ms > 0 OR j.run_keep_last > 0 LIMIT $1) RETURNING id, fire_id",
        limit);
    std::vector<int64_t> own_fires;
    own_fires.reserve(own.size());
    for (const pqxx::row& r : own) own_fires.push_back(r[1].as<int64_t>());
    // Their fires go with them.
    pqxx::result own_fire_rows = tx.exec_params(
        "DELETE FROM fires f WHERE f.id = ANY($1::bigint[]) AND f.status <> " +
            sql::SqlInt(v1::FIRE_STATUS_PENDING) +
            " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.fire_id = f.id) RETURNING id",
        ToPgIntArray(own_fires));
    pqxx::result r2 = tx.exec_params(
        "DELETE FROM fires WHERE id IN (SELECT f.id FROM fires f WHERE f.create_time < "
        "$1::timestamptz AND f.status <> " +
            sql::SqlInt(v1::FIRE_STATUS_PENDING) +
            " AND NOT EXISTS (SELECT 1 FROM runs r WHERE "
            "r.fire_id = f.id) LIMIT $2) RETURNING id",
        before, limit);
    pqxx::result r3 = tx.exec_params(
        "DELETE FROM alarm_outbox WHERE id IN (SELECT id FROM alarm_outbox WHERE sent_at < "
        "$1::timestamptz LIMIT $2) RETURNING id",
        before, limit);
    n = static_cast<int>(r1.size() + own.size() + own_fire_rows.size() + r2.size() + r3.size());
  });
  if (!s.ok()) return s;
  return n;
}

absl::StatusOr<int> PgFireStore::DeleteAuditHistory(absl::Time cutoff, int limit) {
  int n = 0;
  absl::Status s = elector_.RunFenced(
      "audit retention", [&](pqxx::work& tx) { n = DeleteAuditEventsBefore(tx, cutoff, limit); });
  if (!s.ok()) return s;
  return n;
}

}  // namespace jobwheel::scheduler
