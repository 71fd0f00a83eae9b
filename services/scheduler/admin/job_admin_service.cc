#include "services/scheduler/admin/job_admin_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/audit/audit_event.h"
#include "common/base/status_macros.h"
#include "common/grpc/unary_on_pool.h"
#include "services/scheduler/admin/job_access.h"

namespace jobwheel::scheduler::admin {
namespace {

constexpr absl::string_view kService = "JobAdminService";

// Stores a StatusOr's value through `set` and returns its status.
template <typename T, typename Set>
absl::Status Reply(absl::StatusOr<T> result, Set set) {
  if (!result.ok()) return result.status();
  set(*std::move(result));
  return absl::OkStatus();
}

std::string JobName(int64_t id) { return absl::StrCat("job ", id); }

std::string RunName(int64_t id) { return absl::StrCat("run ", id); }

}  // namespace

JobAdminService::JobAdminService(JobAdmin& core, TokenAuthenticator& auth,
                                 JobAdminServiceOptions options)
    : core_(core), auth_(auth), pool_(options.worker_threads, options.max_queued) {}

JobAdminService::~JobAdminService() { pool_.Shutdown(); }

grpc::ServerUnaryReactor* JobAdminService::Handle(
    grpc::CallbackServerContext* ctx, std::function<absl::Status(const Principal&)> work) {
  return AuthorizeOnPool(ctx, pool_, auth_, kService, std::move(work));
}

grpc::ServerUnaryReactor* JobAdminService::CreateJob(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::CreateJobRequest* req,
                                                     jobwheel::v1::CreateJobResponse* resp) {
  const std::string peer = ctx->peer(), request_id = AuditRequestId(*ctx);
  return Handle(ctx, [this, req, resp, peer, request_id](const Principal& p) -> absl::Status {
    const jobwheel::v1::AuditEvent audit = AuditOf(p, "CreateJob", peer, request_id);
    RETURN_IF_ERROR(CheckWriter(p, "CreateJob"));
    RETURN_IF_ERROR(CheckCreate(p, req->job()));
    return Reply(core_.CreateJob(req->job(), WritableApps(p), &audit),
                 [resp](jobwheel::v1::Job j) { *resp->mutable_job() = std::move(j); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::UpdateJob(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::UpdateJobRequest* req,
                                                     jobwheel::v1::UpdateJobResponse* resp) {
  const std::string peer = ctx->peer(), request_id = AuditRequestId(*ctx);
  return Handle(ctx, [this, req, resp, peer, request_id](const Principal& p) -> absl::Status {
    const jobwheel::v1::AuditEvent audit = AuditOf(p, "UpdateJob", peer, request_id);
    RETURN_IF_ERROR(CheckWriter(p, "UpdateJob"));
    // Checked on the locked row, so a concurrent change of app or glue type cannot slip by.
    JobAdmin::WriteGuard guard = [&p](const jobwheel::v1::Job& current,
                                      const jobwheel::v1::Job& next) {
      return CheckEdit(p, current, next);
    };
    return Reply(core_.UpdateJob(req->job(), req->update_mask(), guard, WritableApps(p), &audit),
                 [resp](jobwheel::v1::Job j) { *resp->mutable_job() = std::move(j); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::GetJob(grpc::CallbackServerContext* ctx,
                                                  const jobwheel::v1::GetJobRequest* req,
                                                  jobwheel::v1::GetJobResponse* resp) {
  return Handle(ctx, [this, req, resp](const Principal& p) -> absl::Status {
    ASSIGN_OR_RETURN(jobwheel::v1::Job job, core_.GetJob(req->id()));
    RETURN_IF_ERROR(CheckVisible(p, job.app(), JobNotFoundError(req->id())));
    *resp->mutable_job() = std::move(job);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* JobAdminService::ListJobs(grpc::CallbackServerContext* ctx,
                                                    const jobwheel::v1::ListJobsRequest* req,
                                                    jobwheel::v1::ListJobsResponse* resp) {
  return Handle(ctx, [this, req, resp](const Principal& p) -> absl::Status {
    ASSIGN_OR_RETURN(JobAdmin::AppScope scope, ListScope(p, req->app()));
    return Reply(core_.ListJobs(*req, scope),
                 [resp](jobwheel::v1::ListJobsResponse r) { *resp = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::DeleteJob(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::DeleteJobRequest* req,
                                                     jobwheel::v1::DeleteJobResponse*) {
  const std::string peer = ctx->peer(), request_id = AuditRequestId(*ctx);
  return Handle(ctx, [this, req, peer, request_id](const Principal& p) -> absl::Status {
    const jobwheel::v1::AuditEvent audit = AuditOf(p, "DeleteJob", peer, request_id);
    RETURN_IF_ERROR(CheckWriter(p, "DeleteJob"));
    ASSIGN_OR_RETURN(jobwheel::v1::Job job, core_.GetJob(req->id()));
    RETURN_IF_ERROR(CheckVisible(p, job.app(), JobNotFoundError(req->id())));
    RETURN_IF_ERROR(CheckWrite(p, job.app(), JobName(job.id())));
    return core_.DeleteJob(req->id(), &audit);
  });
}

grpc::ServerUnaryReactor* JobAdminService::PauseJob(grpc::CallbackServerContext* ctx,
                                                    const jobwheel::v1::PauseJobRequest* req,
                                                    jobwheel::v1::PauseJobResponse* resp) {
  const std::string peer = ctx->peer(), request_id = AuditRequestId(*ctx);
  return Handle(ctx, [this, req, resp, peer, request_id](const Principal& p) -> absl::Status {
    const jobwheel::v1::AuditEvent audit = AuditOf(p, "PauseJob", peer, request_id);
    RETURN_IF_ERROR(CheckWriter(p, "PauseJob"));
    JobAdmin::WriteGuard guard = [&p](const jobwheel::v1::Job& current, const jobwheel::v1::Job&) {
      RETURN_IF_ERROR(CheckVisible(p, current.app(), JobNotFoundError(current.id())));
      return CheckWrite(p, current.app(), JobName(current.id()));
    };
    return Reply(core_.PauseJob(req->id(), guard, &audit),
                 [resp](jobwheel::v1::Job j) { *resp->mutable_job() = std::move(j); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::ResumeJob(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::ResumeJobRequest* req,
                                                     jobwheel::v1::ResumeJobResponse* resp) {
  const std::string peer = ctx->peer(), request_id = AuditRequestId(*ctx);
  return Handle(ctx, [this, req, resp, peer, request_id](const Principal& p) -> absl::Status {
    const jobwheel::v1::AuditEvent audit = AuditOf(p, "ResumeJob", peer, request_id);
    RETURN_IF_ERROR(CheckWriter(p, "ResumeJob"));
    JobAdmin::WriteGuard guard = [&p](const jobwheel::v1::Job& current, const jobwheel::v1::Job&) {
      RETURN_IF_ERROR(CheckVisible(p, current.app(), JobNotFoundError(current.id())));
      return CheckWrite(p, current.app(), JobName(current.id()));
    };
    return Reply(core_.ResumeJob(req->id(), guard, &audit),
                 [resp](jobwheel::v1::Job j) { *resp->mutable_job() = std::move(j); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::TriggerJob(grpc::CallbackServerContext* ctx,
                                                      const jobwheel::v1::TriggerJobRequest* req,
                                                      jobwheel::v1::TriggerJobResponse* resp) {
  const std::string peer = ctx->peer(), request_id = AuditRequestId(*ctx);
  return Handle(ctx, [this, req, resp, peer, request_id](const Principal& p) -> absl::Status {
    const jobwheel::v1::AuditEvent audit = AuditOf(p, "TriggerJob", peer, request_id);
    RETURN_IF_ERROR(CheckWriter(p, "TriggerJob"));
    ASSIGN_OR_RETURN(jobwheel::v1::Job job, core_.GetJob(req->id()));
    RETURN_IF_ERROR(CheckVisible(p, job.app(), JobNotFoundError(req->id())));
    RETURN_IF_ERROR(CheckWrite(p, job.app(), JobName(job.id())));
    return Reply(core_.TriggerJob(*req, &audit), [resp](int64_t id) { resp->set_fire_id(id); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::ListRuns(grpc::CallbackServerContext* ctx,
                                                    const jobwheel::v1::ListRunsRequest* req,
                                                    jobwheel::v1::ListRunsResponse* resp) {
  return Handle(ctx, [this, req, resp](const Principal& p) -> absl::Status {
    ASSIGN_OR_RETURN(JobAdmin::AppScope scope, ListScope(p, req->app()));
    return Reply(core_.ListRuns(*req, scope),
                 [resp](jobwheel::v1::ListRunsResponse r) { *resp = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::GetRun(grpc::CallbackServerContext* ctx,
                                                  const jobwheel::v1::GetRunRequest* req,
                                                  jobwheel::v1::GetRunResponse* resp) {
  return Handle(ctx, [this, req, resp](const Principal& p) -> absl::Status {
    ASSIGN_OR_RETURN(jobwheel::v1::Run run, core_.GetRun(req->id()));
    RETURN_IF_ERROR(CheckVisible(p, run.app(), RunNotFoundError(req->id())));
    *resp->mutable_run() = std::move(run);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* JobAdminService::KillRun(grpc::CallbackServerContext* ctx,
                                                   const jobwheel::v1::KillRunRequest* req,
                                                   jobwheel::v1::KillRunResponse* resp) {
  const std::string peer = ctx->peer(), request_id = AuditRequestId(*ctx);
  return Handle(ctx, [this, req, resp, peer, request_id](const Principal& p) -> absl::Status {
    const jobwheel::v1::AuditEvent audit = AuditOf(p, "KillRun", peer, request_id);
    RETURN_IF_ERROR(CheckWriter(p, "KillRun"));
    ASSIGN_OR_RETURN(jobwheel::v1::Run run, core_.GetRun(req->id()));
    RETURN_IF_ERROR(CheckVisible(p, run.app(), RunNotFoundError(req->id())));
    RETURN_IF_ERROR(CheckWrite(p, run.app(), RunName(run.id())));
    return Reply(core_.KillRun(req->id(), &audit),
                 [resp](jobwheel::v1::Run r) { *resp->mutable_run() = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::GetRunLog(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::GetRunLogRequest* req,
                                                     jobwheel::v1::GetRunLogResponse* resp) {
  return Handle(ctx, [this, req, resp](const Principal& p) -> absl::Status {
    ASSIGN_OR_RETURN(jobwheel::v1::Run run, core_.GetRun(req->id()));
    RETURN_IF_ERROR(CheckVisible(p, run.app(), RunNotFoundError(req->id())));
    return Reply(core_.GetRunLog(*req),
                 [resp](jobwheel::v1::GetRunLogResponse r) { *resp = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::PreviewFireTimes(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::PreviewFireTimesRequest* req,
    jobwheel::v1::PreviewFireTimesResponse* resp) {
  // Any admin-API role; pure computation once authenticated (at most 100 fire times).
  return Handle(ctx, [this, req, resp](const Principal&) -> absl::Status {
    return Reply(core_.PreviewFireTimes(*req),
                 [resp](jobwheel::v1::PreviewFireTimesResponse r) { *resp = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::GetRunStats(grpc::CallbackServerContext* ctx,
                                                       const jobwheel::v1::GetRunStatsRequest* req,
                                                       jobwheel::v1::GetRunStatsResponse* resp) {
  return Handle(ctx, [this, req, resp](const Principal& p) -> absl::Status {
    ASSIGN_OR_RETURN(JobAdmin::AppScope scope, ListScope(p, req->app()));
    return Reply(core_.GetRunStats(*req, scope),
                 [resp](jobwheel::v1::GetRunStatsResponse r) { *resp = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::CountJobs(grpc::CallbackServerContext* ctx,
                                                     const jobwheel::v1::CountJobsRequest* req,
                                                     jobwheel::v1::CountJobsResponse* resp) {
  return Handle(ctx, [this, req, resp](const Principal& p) -> absl::Status {
    ASSIGN_OR_RETURN(JobAdmin::AppScope scope, ListScope(p, req->app()));
    return Reply(core_.CountJobs(*req, scope),
                 [resp](jobwheel::v1::CountJobsResponse r) { *resp = std::move(r); });
  });
}

grpc::ServerUnaryReactor* JobAdminService::ListAuditEvents(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::ListAuditEventsRequest* req,
    jobwheel::v1::ListAuditEventsResponse* resp) {
  // ADMIN: every event; OPERATOR and VIEWER: their apps' events.
  return Handle(ctx, [this, req, resp](const Principal& p) -> absl::Status {
    ASSIGN_OR_RETURN(JobAdmin::AppScope scope, ListScope(p, ""));
    return Reply(core_.ListAuditEvents(*req, scope),
                 [resp](jobwheel::v1::ListAuditEventsResponse r) { *resp = std::move(r); });
  });
}

}  // namespace jobwheel::scheduler::admin
