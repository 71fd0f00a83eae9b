#include "services/scheduler/admin/job_admin_service.h"

#include <utility>

#include "common/grpc_status.h"

namespace jobwheel::scheduler::admin {
namespace {

// Stores a StatusOr's value through `set` and returns its status.
template <typename T, typename Set>
absl::Status Reply(absl::StatusOr<T> result, Set set) {
  if (!result.ok()) return result.status();
  set(*std::move(result));
  return absl::OkStatus();
}

}  // namespace

JobAdminService::JobAdminService(JobAdmin& core, TokenPolicy policy, JobAdminServiceOptions options)
    : core_(core), policy_(std::move(policy)), pool_(options.worker_threads, options.max_queued) {
  pool_.Start();
}

JobAdminService::~JobAdminService() { pool_.Shutdown(); }

grpc::ServerUnaryReactor* JobAdminService::Handle(grpc::CallbackServerContext* ctx,
                                                  std::function<absl::Status()> work) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  absl::Status auth = CheckBearer(ctx->client_metadata(), policy_);
  if (!auth.ok()) {
    reactor->Finish(ToGrpcStatus(auth));
    return reactor;
  }
  const bool queued =
      pool_.Submit([reactor, work = std::move(work)]() { reactor->Finish(ToGrpcStatus(work())); });
  if (!queued) {
    reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                 "job admin: too many calls in progress; retry later"));
  }
  return reactor;
}

grpc::ServerUnaryReactor* JobAdminService::CreateJob(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::CreateJobRequest* req,
                                                     jobwheel::v1::CreateJobResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.CreateJob(req->job()),
                 [resp](jobwheel::v1::Job j) { *resp->mutable_job() = std::move(j); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::UpdateJob(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::UpdateJobRequest* req,
                                                     jobwheel::v1::UpdateJobResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.UpdateJob(req->job(), req->update_mask()),
                 [resp](jobwheel::v1::Job j) { *resp->mutable_job() = std::move(j); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::GetJob(grpc::CallbackServerContext* ctx,
                                                  const jobwheel::v1::GetJobRequest* req,
                                                  jobwheel::v1::GetJobResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.GetJob(req->id()),
                 [resp](jobwheel::v1::Job j) { *resp->mutable_job() = std::move(j); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::ListJobs(grpc::CallbackServerContext* ctx,
                                                    const jobwheel::v1::ListJobsRequest* req,
                                                    jobwheel::v1::ListJobsResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.ListJobs(*req),
                 [resp](jobwheel::v1::ListJobsResponse r) { *resp = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::DeleteJob(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::DeleteJobRequest* req,
                                                     jobwheel::v1::DeleteJobResponse*) {
  return Handle(ctx, [this, req] { return core_.DeleteJob(req->id()); });
}

grpc::ServerUnaryReactor* JobAdminService::PauseJob(grpc::CallbackServerContext* ctx,
                                                    const jobwheel::v1::PauseJobRequest* req,
                                                    jobwheel::v1::PauseJobResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.PauseJob(req->id()),
                 [resp](jobwheel::v1::Job j) { *resp->mutable_job() = std::move(j); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::ResumeJob(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::ResumeJobRequest* req,
                                                     jobwheel::v1::ResumeJobResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.ResumeJob(req->id()),
                 [resp](jobwheel::v1::Job j) { *resp->mutable_job() = std::move(j); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::TriggerJob(grpc::CallbackServerContext* ctx,
                                                      const jobwheel::v1::TriggerJobRequest* req,
                                                      jobwheel::v1::TriggerJobResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.TriggerJob(*req), [resp](int64_t id) { resp->set_fire_id(id); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::ListRuns(grpc::CallbackServerContext* ctx,
                                                    const jobwheel::v1::ListRunsRequest* req,
                                                    jobwheel::v1::ListRunsResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.ListRuns(*req),
                 [resp](jobwheel::v1::ListRunsResponse r) { *resp = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::GetRun(grpc::CallbackServerContext* ctx,
                                                  const jobwheel::v1::GetRunRequest* req,
                                                  jobwheel::v1::GetRunResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.GetRun(req->id()),
                 [resp](jobwheel::v1::Run r) { *resp->mutable_run() = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::KillRun(grpc::CallbackServerContext* ctx,
                                                   const jobwheel::v1::KillRunRequest* req,
                                                   jobwheel::v1::KillRunResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.KillRun(req->id()),
                 [resp](jobwheel::v1::Run r) { *resp->mutable_run() = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::GetRunLog(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::GetRunLogRequest* req,
                                                     jobwheel::v1::GetRunLogResponse* resp) {
  return Handle(ctx, [this, req, resp] {
    return Reply(core_.GetRunLog(*req),
                 [resp](jobwheel::v1::GetRunLogResponse r) { *resp = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::PreviewFireTimes(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::PreviewFireTimesRequest* req,
    jobwheel::v1::PreviewFireTimesResponse* resp) {
  // Pure computation (at most 100 fire times): answered on the reactor thread.
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  absl::Status status = CheckBearer(ctx->client_metadata(), policy_);
  if (status.ok()) {
    status = Reply(core_.PreviewFireTimes(*req),
                   [resp](jobwheel::v1::PreviewFireTimesResponse r) { *resp = std::move(r); });
  }
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace jobwheel::scheduler::admin
