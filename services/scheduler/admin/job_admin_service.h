#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_ADMIN_SERVICE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_ADMIN_SERVICE_H_

#include <functional>

#include "absl/status/status.h"
#include "common/auth/token_authenticator.h"
#include "common/base/work_pool.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "services/scheduler/admin/job_admin.h"

namespace jobwheel::scheduler::admin {

struct JobAdminServiceOptions {
  // Worker threads running JobAdmin calls (database and executor round trips), so reactor
  // threads never block. Keep at or below the PgPool size.
  int worker_threads = 4;
  // Calls waiting for a worker; beyond this a call fails at once with RESOURCE_EXHAUSTED
  // (AuthorizeOnPool).
  int max_queued = 256;
};

// The gRPC surface of JobAdmin (callback API): on a bounded WorkPool, authenticates every call
// (ADMIN, OPERATOR or VIEWER tokens; see job_access.h for what each may do), authorizes it
// against the job's or run's app, runs the core and maps statuses with ToGrpcStatus. Every
// mutating call passes the core an audit event (actor = the token's id and name, the RPC, the
// peer address, x-request-id or a generated id), recorded only when the change commits. The gRPC
// server must be shut down before this object is destroyed; destruction finishes queued calls.
class JobAdminService final : public jobwheel::v1::JobAdminService::CallbackService {
 public:
  // `auth` must outlive this service.
  JobAdminService(JobAdmin& core, TokenAuthenticator& auth, JobAdminServiceOptions options = {});
  ~JobAdminService() override;

  grpc::ServerUnaryReactor* CreateJob(grpc::CallbackServerContext* ctx,
                                      const jobwheel::v1::CreateJobRequest* req,
                                      jobwheel::v1::CreateJobResponse* resp) override;
  grpc::ServerUnaryReactor* UpdateJob(grpc::CallbackServerContext* ctx,
                                      const jobwheel::v1::UpdateJobRequest* req,
                                      jobwheel::v1::UpdateJobResponse* resp) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx,
                                   const jobwheel::v1::GetJobRequest* req,
                                   jobwheel::v1::GetJobResponse* resp) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx,
                                     const jobwheel::v1::ListJobsRequest* req,
                                     jobwheel::v1::ListJobsResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteJob(grpc::CallbackServerContext* ctx,
                                      const jobwheel::v1::DeleteJobRequest* req,
                                      jobwheel::v1::DeleteJobResponse* resp) override;
  grpc::ServerUnaryReactor* PauseJob(grpc::CallbackServerContext* ctx,
                                     const jobwheel::v1::PauseJobRequest* req,
                                     jobwheel::v1::PauseJobResponse* resp) override;
  grpc::ServerUnaryReactor* ResumeJob(grpc::CallbackServerContext* ctx,
                                      const jobwheel::v1::ResumeJobRequest* req,
                                      jobwheel::v1::ResumeJobResponse* resp) override;
  grpc::ServerUnaryReactor* TriggerJob(grpc::CallbackServerContext* ctx,
                                       const jobwheel::v1::TriggerJobRequest* req,
                                       jobwheel::v1::TriggerJobResponse* resp) override;
  grpc::ServerUnaryReactor* ListRuns(grpc::CallbackServerContext* ctx,
                                     const jobwheel::v1::ListRunsRequest* req,
                                     jobwheel::v1::ListRunsResponse* resp) override;
  grpc::ServerUnaryReactor* GetRun(grpc::CallbackServerContext* ctx,
                                   const jobwheel::v1::GetRunRequest* req,
                                   jobwheel::v1::GetRunResponse* resp) override;
  grpc::ServerUnaryReactor* KillRun(grpc::CallbackServerContext* ctx,
                                    const jobwheel::v1::KillRunRequest* req,
                                    jobwheel::v1::KillRunResponse* resp) override;
  grpc::ServerUnaryReactor* GetRunLog(grpc::CallbackServerContext* ctx,
                                      const jobwheel::v1::GetRunLogRequest* req,
                                      jobwheel::v1::GetRunLogResponse* resp) override;
  grpc::ServerUnaryReactor* PreviewFireTimes(grpc::CallbackServerContext* ctx,
                                             const jobwheel::v1::PreviewFireTimesRequest* req,
                                             jobwheel::v1::PreviewFireTimesResponse* resp) override;
  grpc::ServerUnaryReactor* GetRunStats(grpc::CallbackServerContext* ctx,
                                        const jobwheel::v1::GetRunStatsRequest* req,
                                        jobwheel::v1::GetRunStatsResponse* resp) override;
  grpc::ServerUnaryReactor* CountJobs(grpc::CallbackServerContext* ctx,
                                      const jobwheel::v1::CountJobsRequest* req,
                                      jobwheel::v1::CountJobsResponse* resp) override;
  grpc::ServerUnaryReactor* ListAuditEvents(grpc::CallbackServerContext* ctx,
                                            const jobwheel::v1::ListAuditEventsRequest* req,
                                            jobwheel::v1::ListAuditEventsResponse* resp) override;

 private:
  // AuthorizeOnPool on this service's pool.
  grpc::ServerUnaryReactor* Handle(grpc::CallbackServerContext* ctx,
                                   std::function<absl::Status(const Principal&)> work);

  JobAdmin& core_;
  TokenAuthenticator& auth_;
  WorkPool pool_;
};

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_ADMIN_SERVICE_H_
