#include "services/scheduler/delay_chain_sql.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/pg/pg_arrays.h"
#include "common/pg/pg_prepared.h"
#include "common/pg/sql_enums.h"

namespace jobwheel::scheduler {

void DropDelayJobsWithOpenRuns(pqxx::work& tx, std::vector<jobwheel::v1::Job>* jobs) {
  std::vector<int64_t> delay_jobs;
  for (const jobwheel::v1::Job& j : *jobs) {
    if (j.schedule().has_fix_delay()) delay_jobs.push_back(j.id());
  }
  if (delay_jobs.empty()) return;
  static const std::string* const kSql = new std::string(absl::StrCat(
      "SELECT DISTINCT job_id FROM runs WHERE job_id = ANY($1::bigint[]) AND status IN ",
      sql::OpenRunStatusesSql()));
  pqxx::result open =
      ExecPrepared(tx, "delay_jobs_with_open_runs", *kSql, ToPgIntArray(delay_jobs));
  if (open.empty()) return;
  absl::flat_hash_set<int64_t> busy;
  for (const pqxx::row& r : open) busy.insert(r[0].as<int64_t>());
  jobs->erase(std::remove_if(jobs->begin(), jobs->end(),
                             [&](const jobwheel::v1::Job& j) { return busy.contains(j.id()); }),
              jobs->end());
}

// The fire is found by the unique (job, scheduled time) of schedule-driven fires, so one the
// claim had already recorded counts too.
void RecordDelayChains(pqxx::work& tx, const std::vector<DelayChainFire>& chains) {
  std::vector<int64_t> jobs;
  std::vector<std::optional<absl::Time>> times;
  jobs.reserve(chains.size());
  times.reserve(chains.size());
  for (const DelayChainFire& c : chains) {
    jobs.push_back(c.job_id);
    times.push_back(c.scheduled);
  }
  static const std::string* const kSql = new std::string(
      absl::StrCat("UPDATE jobs j SET delay_fire_id = f.id FROM unnest($1::bigint[], "
                   "$2::timestamptz[]) AS u(job_id, at) JOIN fires f ON f.job_id = u.job_id AND "
                   "f.scheduled_at = u.at AND f.trigger_type IN ",
                   sql::ScheduleTriggerTypesSql(), " WHERE j.id = u.job_id"));
  ExecPrepared(tx, "record_delay_chains", *kSql, ToPgIntArray(jobs), ToPgTimeArray(times));
}

FireStore::DelayChainResult AdvanceDelayChainsIn(pqxx::work& tx, int limit) {
  FireStore::DelayChainResult result;
  static const std::string* const kSql = new std::string(absl::StrCat(
      "WITH ready AS (SELECT j.id, j.delay_fire_id, j.fix_delay_ms FROM jobs j "
      "WHERE j.delay_fire_id IS NOT NULL AND j.enabled AND j.schedule_kind = 'FIX_DELAY' "
      "AND NOT EXISTS (SELECT 1 FROM fires f WHERE f.id = j.delay_fire_id AND f.status = ",
      sql::SqlInt(v1::FIRE_STATUS_PENDING),
      ") AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.fire_id = j.delay_fire_id AND "
      "(r.status < ",
      sql::FirstTerminalRunStatusSql(),
      " OR NOT r.followup_done)) "
      "AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.job_id = j.id AND r.status IN ",
      sql::OpenRunStatusesSql(),
      ") ORDER BY j.id LIMIT $1 FOR UPDATE OF j SKIP LOCKED) "
      "UPDATE jobs SET next_fire_at = COALESCE((SELECT max(r.end_time) FROM runs r WHERE "
      "r.fire_id = ready.delay_fire_id), now()) + ready.fix_delay_ms * interval '1 millisecond', "
      "delay_fire_id = NULL FROM ready WHERE jobs.id = ready.id RETURNING jobs.id"));
  pqxx::result advanced = ExecPrepared(tx, "advance_delay_chains", *kSql, limit);
  result.advanced = static_cast<int>(advanced.size());
  result.waiting =
      tx.exec("SELECT count(*) FROM jobs WHERE delay_fire_id IS NOT NULL")[0][0].as<int>();
  return result;
}

}  // namespace jobwheel::scheduler
