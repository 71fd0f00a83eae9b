#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_ADMIN_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_ADMIN_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/time/clock.h"
#include "google/protobuf/field_mask.pb.h"
#include "jobwheel/v1/job_admin.pb.h"
#include "jobwheel/v1/types.pb.h"
#include "services/scheduler/admin/executor_client.h"
#include "services/scheduler/admin/job_store.h"

namespace jobwheel::scheduler::admin {

// Job and run administration: validates requests, computes next fire times with the injected
// clock, and applies them through the JobStore (one transaction per write). Kill and log
// requests reach executors only at addresses registered for the run's app. No gRPC types.
// Thread-safe (stateless besides its references, which must outlive it).
class JobAdmin {
 public:
  // Lines asked from an executor per GetRunLog call.
  static constexpr int kLogMaxLines = 1000;

  // Checked inside a job's write transaction with the locked current row and the row about to
  // be written (e.g. the caller's permissions); a non-OK status aborts the write.
  using WriteGuard =
      std::function<absl::Status(const jobwheel::v1::Job& current, const jobwheel::v1::Job& next)>;
  // Set: confine a list to these apps (the caller's token scope).
  using AppScope = std::optional<std::vector<std::string>>;

  JobAdmin(JobStore& store, ExecutorClient& executors, const Clock& clock);

  // Writes take `audit` (nullptr: not audited): the event the store records with the change,
  // in its transaction (see JobStore), with the caller's actor, action, peer and request id.
  //
  // `writer`: the apps the caller may operate (nullopt: every app). When a write sets or
  // changes child_job_ids, each child must be a job of one of those apps (otherwise the same
  // INVALID_ARGUMENT as a missing id: "job.child_job_ids[i]: job N does not exist"), and
  // `writer` is stored as the job's child scope, which bounds the apps its children may fire in.
  absl::StatusOr<jobwheel::v1::Job> CreateJob(const jobwheel::v1::Job& job,
                                              const AppScope& writer = std::nullopt,
                                              const jobwheel::v1::AuditEvent* audit = nullptr);
  absl::StatusOr<jobwheel::v1::Job> UpdateJob(const jobwheel::v1::Job& job,
                                              const google::protobuf::FieldMask& mask,
                                              const WriteGuard& guard = nullptr,
                                              const AppScope& writer = std::nullopt,
                                              const jobwheel::v1::AuditEvent* audit = nullptr);
  absl::StatusOr<jobwheel::v1::Job> GetJob(int64_t id);
  absl::StatusOr<jobwheel::v1::ListJobsResponse> ListJobs(const jobwheel::v1::ListJobsRequest& req,
                                                          const AppScope& scope = std::nullopt);
  absl::Status DeleteJob(int64_t id, const jobwheel::v1::AuditEvent* audit = nullptr);
  // Idempotent: pausing a paused job (or resuming a running one) changes nothing (and is not
  // audited).
  absl::StatusOr<jobwheel::v1::Job> PauseJob(int64_t id, const WriteGuard& guard = nullptr,
                                             const jobwheel::v1::AuditEvent* audit = nullptr);
  absl::StatusOr<jobwheel::v1::Job> ResumeJob(int64_t id, const WriteGuard& guard = nullptr,
                                              const jobwheel::v1::AuditEvent* audit = nullptr);
  // Returns the id of the MANUAL fire. Works on paused jobs too.
  absl::StatusOr<int64_t> TriggerJob(const jobwheel::v1::TriggerJobRequest& req,
                                     const jobwheel::v1::AuditEvent* audit = nullptr);

  absl::StatusOr<jobwheel::v1::ListRunsResponse> ListRuns(const jobwheel::v1::ListRunsRequest& req,
                                                          const AppScope& scope = std::nullopt);
  absl::StatusOr<jobwheel::v1::Run> GetRun(int64_t id);
  // A kill the executor carried out is audited on its own (the executor reports the change);
  // one recorded here (the executor unreachable) in the transaction that marks the run KILLED.
  absl::StatusOr<jobwheel::v1::Run> KillRun(int64_t id,
                                            const jobwheel::v1::AuditEvent* audit = nullptr);

  // The audit trail, newest first, confined to `scope`.
  absl::StatusOr<jobwheel::v1::ListAuditEventsResponse> ListAuditEvents(
      const jobwheel::v1::ListAuditEventsRequest& req, const AppScope& scope = std::nullopt);
  absl::StatusOr<jobwheel::v1::GetRunLogResponse> GetRunLog(
      const jobwheel::v1::GetRunLogRequest& req);

  absl::StatusOr<jobwheel::v1::PreviewFireTimesResponse> PreviewFireTimes(
      const jobwheel::v1::PreviewFireTimesRequest& req);

  // Dashboards: run counts by status and lateness per time bucket (see run_stats.h), and job
  // and open-run counts per app; both confined to `scope`.
  absl::StatusOr<jobwheel::v1::GetRunStatsResponse> GetRunStats(
      const jobwheel::v1::GetRunStatsRequest& req, const AppScope& scope = std::nullopt);
  absl::StatusOr<jobwheel::v1::CountJobsResponse> CountJobs(
      const jobwheel::v1::CountJobsRequest& req, const AppScope& scope = std::nullopt);

 private:
  // Builds the write for `merged` (already merged with the current row, if any).
  absl::StatusOr<JobWrite> PrepareWrite(const jobwheel::v1::Job& merged,
                                        const jobwheel::v1::Job* current,
                                        const ChildGraphReader& read_graph, absl::Time now,
                                        const AppScope& writer);
  absl::StatusOr<jobwheel::v1::Job> SetEnabled(int64_t id, bool enabled, const WriteGuard& guard,
                                               const jobwheel::v1::AuditEvent* audit);

  JobStore& store_;
  ExecutorClient& executors_;
  const Clock& clock_;
};

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_ADMIN_H_
