#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_PG_JOB_STORE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_PG_JOB_STORE_H_

#include "common/pg/pg_pool.h"
#include "services/scheduler/admin/job_store.h"

namespace jobwheel::scheduler::admin {

// JobStore on PostgreSQL (tables jobs, scripts, fires, runs, executors, apps). Each call is one
// transaction on a pooled connection; every statement is parameterized. Writers that change
// child-job edges serialize on a transaction-level advisory lock (taken after the job's row
// lock) so concurrent updates cannot close a cycle. Thread-safe; `pool` must outlive it.
class PgJobStore : public JobStore {
 public:
  explicit PgJobStore(PgPool& pool);

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
  // In pg_job_stats.cc.
  absl::StatusOr<RunStatsRows> RunStats(const RunStatsQuery& query) override;
  absl::StatusOr<std::vector<AppJobCountsRow>> CountJobs(
      const std::string& app, const std::optional<std::vector<std::string>>& only_apps) override;

 private:
  PgPool& pool_;
};

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_PG_JOB_STORE_H_
