#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_STORE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/audit/audit_filter.h"
#include "jobwheel/v1/job_admin.pb.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::scheduler::admin {

// The child-job graph as a write transaction sees it (after it took the graph lock).
struct ChildGraph {
  // Which of the requested child ids name existing jobs.
  absl::flat_hash_set<int64_t> existing;
  // The app of each of those.
  absl::flat_hash_map<int64_t, std::string> app_of;
  // child_job_ids of every job that has any.
  absl::flat_hash_map<int64_t, std::vector<int64_t>> children;
};

// Reads the child graph inside the current write transaction; `ids` are the child ids whose
// existence matters. Serializes concurrent child-graph writers until the transaction ends, so
// two writers cannot close a cycle between them.
using ChildGraphReader = std::function<absl::StatusOr<ChildGraph>(const std::vector<int64_t>& ids)>;

// A validated job row to write.
struct JobWrite {
  // Normalized and validated. `id`, `next_fire_time` are ignored; `script_version`,
  // `create_time` (on create) and `update_time` are written as given.
  jobwheel::v1::Job job;
  // NULL when disabled or when the schedule never fires.
  std::optional<absl::Time> next_fire_at;
  // Records job.script_source as version job.script_version in `scripts`.
  bool new_script_version = false;
  // Writes `child_scope` (always on create): the apps the writer of child_job_ids may operate
  // (nullopt: every app). At fire time a child in another app than its parent's fires only
  // when its app is in this scope.
  bool write_child_scope = false;
  std::optional<std::vector<std::string>> child_scope;
  // Due times the write cuts off: the job was behind (its next fire time already past and not
  // yet claimed, e.g. while the leader sheds under load) and the write moves next_fire_at past
  // them. Written as one SKIPPED fire at `first` whose reason names how many ("misfire: N
  // fire(s) from … to … skipped; …", as the leader's misfire rows), so the record of the due
  // times that did not run stays exact. Unset: nothing cut off.
  struct CutOff {
    absl::Time first;
    jobwheel::v1::TriggerType trigger_type = jobwheel::v1::TRIGGER_TYPE_UNSPECIFIED;
    std::string reason;
  };
  std::optional<CutOff> cut_off;
};

// Computes the row to write from the locked current row (nullptr on create). Returning
// nullopt leaves the job unchanged (e.g. pausing a paused job).
using JobMutation = std::function<absl::StatusOr<std::optional<JobWrite>>(
    const jobwheel::v1::Job* current, const ChildGraphReader& read_graph)>;

struct JobFilter {
  std::string app;              // Empty: all.
  std::optional<bool> enabled;  // Unset: both.
  std::string name_contains;    // Case-insensitive substring; empty: all.
  // Labels the job has with these values (key=value), and pairs it has not (key!=value: another
  // value or no such label).
  std::vector<std::pair<std::string, std::string>> labels_equal;
  std::vector<std::pair<std::string, std::string>> labels_not_equal;
  // Set: only jobs of these apps (the caller's token scope); an empty list matches nothing.
  std::optional<std::vector<std::string>> only_apps;
};

struct RunFilter {
  int64_t job_id = 0;                             // Zero: all.
  std::string app;                                // Empty: all.
  std::vector<jobwheel::v1::RunStatus> statuses;  // Empty: all.
  std::optional<absl::Time> triggered_from;       // trigger_time >= this.
  std::optional<absl::Time> triggered_before;     // trigger_time < this.
  // Set: only runs of these apps (the caller's token scope); an empty list matches nothing.
  std::optional<std::vector<std::string>> only_apps;
};

// What GetRunStats reads: runs triggered in [start, end), counted in buckets of `bucket`
// (bucket i covers [start + i * bucket, start + (i + 1) * bucket)).
struct RunStatsQuery {
  std::string app;     // Empty: all.
  int64_t job_id = 0;  // Zero: all.
  // Set: only runs of these apps (the caller's token scope); an empty list matches nothing.
  std::optional<std::vector<std::string>> only_apps;
  absl::Time start;
  absl::Time end;
  absl::Duration bucket;  // Whole seconds, positive.
};

// Trigger lateness (trigger_time - scheduled_time) of the schedule-driven runs (CRON,
// FIX_RATE) of a group; percentiles interpolate linearly (PostgreSQL's percentile_cont).
struct LatenessStats {
  int64_t samples = 0;  // The durations below are zero when there are none.
  absl::Duration p50;
  absl::Duration p99;
  absl::Duration max;
};

// Aggregates over RunStatsQuery's runs.
struct RunStatsRows {
  struct Count {
    int64_t bucket = 0;
    jobwheel::v1::RunStatus status = jobwheel::v1::RUN_STATUS_UNSPECIFIED;
    int64_t runs = 0;
  };
  std::vector<Count> counts;  // Only non-zero (bucket, status) pairs, in any order.
  absl::flat_hash_map<int64_t, LatenessStats> lateness;  // By bucket; only buckets with samples.
  LatenessStats overall_lateness;
};

// One app's job and open-run counts (CountJobs).
struct AppJobCountsRow {
  std::string app;
  int64_t jobs = 0;
  int64_t enabled_jobs = 0;
  int64_t pending_runs = 0;
  int64_t running_runs = 0;
};

// A fire requested by an operator (TriggerJob).
struct ManualFire {
  int64_t job_id = 0;
  std::optional<std::string> param;  // Unset: the job's param at dispatch.
  int32_t shard_index = 0;
  int32_t shard_total = 0;  // Zero: not sharded by the operator.
  // Empty: routing decides. Otherwise the store checks it is an online executor of the app.
  std::string executor_address;
};

enum class ExecutorState { kUnknown, kOffline, kOnline };

// What a missing job or run answers; also what an id of an app the caller may not read answers,
// so the answer does not tell whether it exists.
inline absl::Status JobNotFoundError(int64_t id) {
  return absl::NotFoundError("job " + std::to_string(id) + " not found");
}
inline absl::Status RunNotFoundError(int64_t id) {
  return absl::NotFoundError("run " + std::to_string(id) + " not found");
}

// Durable state behind JobAdmin. Every write that changes a job runs in one transaction that
// locks the job row, writes it with its next_fire_at, and deletes the job's pending
// schedule-driven fires in the future, so the firing leader never dispatches a stale fire.
// Implementations are thread-safe.
//
// Audit: a write given an `audit` event (actor, action, peer and request id set; nullptr: none)
// records it in the same transaction as the change, with its target ("job N", "run N"), apps
// and field changes filled in (DiffJobs of the rows before and after); a write that fails, or
// changes nothing, records none.
class JobStore {
 public:
  virtual ~JobStore() = default;

  // `prepare` is called with current == nullptr. Also registers the app name in `apps`.
  virtual absl::StatusOr<jobwheel::v1::Job> CreateJob(const JobMutation& prepare,
                                                      const jobwheel::v1::AuditEvent* audit) = 0;
  // NOT_FOUND when the job does not exist.
  virtual absl::StatusOr<jobwheel::v1::Job> UpdateJob(int64_t id, const JobMutation& mutate,
                                                      const jobwheel::v1::AuditEvent* audit) = 0;
  virtual absl::StatusOr<jobwheel::v1::Job> GetJob(int64_t id) = 0;
  // Jobs with id > after_id matching `filter`, by id ascending, at most `limit`.
  virtual absl::StatusOr<std::vector<jobwheel::v1::Job>> ListJobs(const JobFilter& filter,
                                                                  int64_t after_id, int limit) = 0;
  // Removes the job, its scripts and its pending fires; runs stay. NOT_FOUND when missing;
  // FAILED_PRECONDITION when another job lists it as a child.
  virtual absl::Status DeleteJob(int64_t id, const jobwheel::v1::AuditEvent* audit) = 0;

  // Inserts a PENDING MANUAL fire scheduled now; returns its id. NOT_FOUND when the job is
  // missing; FAILED_PRECONDITION when executor_address is set but is not an online executor of
  // the job's app.
  virtual absl::StatusOr<int64_t> InsertManualFire(const ManualFire& fire,
                                                   const jobwheel::v1::AuditEvent* audit) = 0;

  // Runs with id < before_id (0: no bound) matching `filter`, newest (highest id) first.
  virtual absl::StatusOr<std::vector<jobwheel::v1::Run>> ListRuns(const RunFilter& filter,
                                                                  int64_t before_id, int limit) = 0;
  virtual absl::StatusOr<jobwheel::v1::Run> GetRun(int64_t id) = 0;
  // Whether `address` is a registered executor of `app`, and whether it is online.
  virtual absl::StatusOr<ExecutorState> GetExecutorState(const std::string& app,
                                                         const std::string& address) = 0;
  // Sets a PENDING/RUNNING run to KILLED with `message` and returns the run as stored
  // afterwards (unchanged when it had already finished).
  virtual absl::StatusOr<jobwheel::v1::Run> MarkRunKilled(
      int64_t id, const std::string& message, const jobwheel::v1::AuditEvent* audit) = 0;
  // Records `audit` on its own, for a change made elsewhere (an executor killing a run).
  virtual absl::Status AppendAudit(const jobwheel::v1::AuditEvent& audit) = 0;
  // Events with id < before_id (0: no bound) matching `filter`, newest first.
  virtual absl::StatusOr<std::vector<jobwheel::v1::AuditEvent>> ListAuditEvents(
      const AuditFilter& filter, int64_t before_id, int limit) = 0;

  // Run counts by bucket and status, and lateness, of the runs `query` selects.
  virtual absl::StatusOr<RunStatsRows> RunStats(const RunStatsQuery& query) = 0;
  // Per app, by name: every app that is registered, has jobs or has open runs, confined to
  // `app` (when not empty) and to `only_apps` (when set; an empty list matches nothing).
  virtual absl::StatusOr<std::vector<AppJobCountsRow>> CountJobs(
      const std::string& app, const std::optional<std::vector<std::string>>& only_apps) = 0;
};

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_STORE_H_
