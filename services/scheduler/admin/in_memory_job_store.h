#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_IN_MEMORY_JOB_STORE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_IN_MEMORY_JOB_STORE_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "services/scheduler/admin/job_store.h"

namespace jobwheel::scheduler::admin {

// JobStore in memory for tests, with the same semantics as PgJobStore (stale-fire deletion,
// executor checks, NOT_FOUND / FAILED_PRECONDITION cases). Thread-safe: every call holds one
// mutex, so mutations are serialized like PgJobStore's transactions.
class InMemoryJobStore : public JobStore {
 public:
  struct Fire {
    int64_t id = 0;
    int64_t job_id = 0;
    absl::Time scheduled_at;
    jobwheel::v1::TriggerType trigger_type = jobwheel::v1::TRIGGER_TYPE_CRON;
    jobwheel::v1::FireStatus status = jobwheel::v1::FIRE_STATUS_PENDING;
    std::optional<std::string> param;
    int32_t shard_index = 0;
    int32_t shard_total = 0;
    std::string executor_address;
    std::string reason;
  };

  explicit InMemoryJobStore(const Clock& clock) : clock_(clock) {}

  // Test setup and inspection.
  void AddExecutor(const std::string& app, const std::string& address, bool online);
  int64_t AddRun(jobwheel::v1::Run run);  // Assigns the id when zero; returns it.
  int64_t AddFire(Fire fire);             // Assigns the id; returns it.
  std::vector<Fire> fires() const;
  std::optional<absl::Time> next_fire_at(int64_t job_id) const;
  std::set<std::string> apps() const;
  // (job_id, version) → source.
  std::map<std::pair<int64_t, int32_t>, std::string> scripts() const;
  // The job's child_scope column (nullopt: every app); NOT_FOUND when missing.
  absl::StatusOr<std::optional<std::vector<std::string>>> child_scope(int64_t job_id) const;

  absl::StatusOr<jobwheel::v1::Job> CreateJob(const JobMutation& prepare,
                                              const jobwheel::v1::AuditEvent* audit) override;
  absl::StatusOr<jobwheel::v1::Job> UpdateJob(int64_t id, const JobMutation& mutate,
                                              const jobwheel::v1::AuditEvent* audit) override;
  absl::StatusOr<jobwheel::v1::Job> GetJob(int64_t id) override;
  absl::StatusOr<std::vector<jobwheel::v1::Job>> ListJobs(const JobFilter& filter, int64_t after_id,
                                                          int limit) override;
  absl::Status DeleteJob(int64_t id, const jobwheel::v1::AuditEvent* audit) override;
  absl::StatusOr<int64_t> InsertManualFire(const ManualFire& fire,
                                           const jobwheel::v1::AuditEvent* audit) override;
  absl::StatusOr<std::vector<jobwheel::v1::Run>> ListRuns(const RunFilter& filter,
                                                          int64_t before_id, int limit) override;
  absl::StatusOr<jobwheel::v1::Run> GetRun(int64_t id) override;
  absl::StatusOr<ExecutorState> GetExecutorState(const std::string& app,
                                                 const std::string& address) override;
  absl::StatusOr<jobwheel::v1::Run> MarkRunKilled(int64_t id, const std::string& message,
                                                  const jobwheel::v1::AuditEvent* audit) override;
  absl::Status AppendAudit(const jobwheel::v1::AuditEvent& audit) override;
  absl::StatusOr<std::vector<jobwheel::v1::AuditEvent>> ListAuditEvents(const AuditFilter& filter,
                                                                        int64_t before_id,
                                                                        int limit) override;
  absl::StatusOr<RunStatsRows> RunStats(const RunStatsQuery& query) override;
  absl::StatusOr<std::vector<AppJobCountsRow>> CountJobs(
      const std::string& app, const std::optional<std::vector<std::string>>& only_apps) override;

 private:
  struct StoredJob {
    jobwheel::v1::Job job;
    std::optional<absl::Time> next_fire_at;
    std::optional<std::vector<std::string>> child_scope = std::vector<std::string>();
  };

  ChildGraphReader GraphReader() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  jobwheel::v1::Job Apply(int64_t id, const JobWrite& write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Audit(const jobwheel::v1::AuditEvent* audit, const std::string& target,
             const std::vector<std::string>& apps,
             std::vector<jobwheel::v1::AuditFieldChange> changes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock& clock_;
  mutable absl::Mutex mu_;
  int64_t next_job_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t next_fire_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t next_run_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t next_audit_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<jobwheel::v1::AuditEvent> audit_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, StoredJob> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, Fire> fires_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, jobwheel::v1::Run> runs_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, bool> executors_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> apps_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<int64_t, int32_t>, std::string> scripts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_IN_MEMORY_JOB_STORE_H_
