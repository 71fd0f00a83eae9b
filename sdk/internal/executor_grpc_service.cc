#include "sdk/internal/executor_grpc_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc/grpc_status.h"

namespace jobwheel::sdk {
namespace {

grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* ctx, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

ExecutorGrpcService::ExecutorGrpcService(RunManager* runs, RunLogStore* logs,
                                         ExecutorCallers callers)
    : runs_(runs), logs_(logs), callers_(std::move(callers)) {}

grpc::ServerUnaryReactor* ExecutorGrpcService::Run(grpc::CallbackServerContext* ctx,
                                                   const jobwheel::v1::RunRequest* request,
                                                   jobwheel::v1::RunResponse* response) {
  absl::Status auth = AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kRun);
  if (!auth.ok()) return Finish(ctx, auth);
  auto outcome = runs_->Submit(*request);
  if (!outcome.ok()) return Finish(ctx, outcome.status());
  response->set_disposition(outcome->disposition);
  response->set_message(outcome->message);
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* ExecutorGrpcService::RunBatch(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::RunBatchRequest* request,
    jobwheel::v1::RunBatchResponse* response) {
  absl::Status auth =
      AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kRunBatch);
  if (!auth.ok()) return Finish(ctx, auth);
  if (request->runs_size() == 0) {
    return Finish(ctx, absl::InvalidArgumentError("runs: must not be empty"));
  }
  if (request->runs_size() > kMaxBatchRuns) {
    return Finish(
        ctx, absl::InvalidArgumentError(absl::StrCat("runs: at most ", kMaxBatchRuns,
                                                     " per call, got ", request->runs_size())));
  }
  response->mutable_responses()->Reserve(request->runs_size());
  for (int i = 0; i < request->runs_size(); ++i) {
    jobwheel::v1::RunResponse* r = response->add_responses();
    const jobwheel::v1::RunRequest& run = request->runs(i);
    // One bad run does not fail the others.
    absl::Status valid = RunManager::Validate(run);
    if (!valid.ok()) {
      r->set_disposition(jobwheel::v1::RUN_DISPOSITION_REJECTED);
      r->set_message(absl::StrCat(
          "runs[", i, "].", valid.message(),
          run.run_id() > 0 ? absl::StrCat(" (run ", run.run_id(), ")") : std::string()));
      continue;
    }
    auto outcome = runs_->Submit(run);
    if (!outcome.ok()) {
      r->set_disposition(jobwheel::v1::RUN_DISPOSITION_REJECTED);
      r->set_message(absl::StrCat("runs[", i, "]: ", outcome.status().ToString()));
      continue;
    }
    r->set_disposition(outcome->disposition);
    r->set_message(std::move(outcome->message));
  }
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* ExecutorGrpcService::Kill(grpc::CallbackServerContext* ctx,
                                                    const jobwheel::v1::KillRequest* request,
                                                    jobwheel::v1::KillResponse* response) {
  absl::Status auth = AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kKill);
  if (!auth.ok()) return Finish(ctx, auth);
  if (request->run_id() <= 0) {
    return Finish(ctx, absl::InvalidArgumentError("run_id: must be positive"));
  }
  RunManager::KillOutcome outcome = runs_->Kill(request->run_id(), request->reason());
  response->set_killed(outcome.killed);
  response->set_message(outcome.message);
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* ExecutorGrpcService::Beat(grpc::CallbackServerContext* ctx,
                                                    const jobwheel::v1::BeatRequest*,
                                                    jobwheel::v1::BeatResponse*) {
  return Finish(ctx, AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kBeat));
}

grpc::ServerUnaryReactor* ExecutorGrpcService::IdleBeat(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::IdleBeatRequest* request,
    jobwheel::v1::IdleBeatResponse* response) {
  absl::Status auth =
      AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kIdleBeat);
  if (!auth.ok()) return Finish(ctx, auth);
  if (request->job_id() <= 0) {
    return Finish(ctx, absl::InvalidArgumentError("job_id: must be positive"));
  }
  RunManager::Load load = runs_->JobLoad(request->job_id());
  response->set_running(load.running);
  response->set_queued(load.queued);
  response->set_idle(load.running == 0 && load.queued == 0);
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* ExecutorGrpcService::Log(grpc::CallbackServerContext* ctx,
                                                   const jobwheel::v1::LogRequest* request,
                                                   jobwheel::v1::LogResponse* response) {
  absl::Status auth = AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kLog);
  if (!auth.ok()) return Finish(ctx, auth);
  if (request->run_id() <= 0) {
    return Finish(ctx, absl::InvalidArgumentError("run_id: must be positive"));
  }
  if (request->from_line() < 0) {
    return Finish(ctx, absl::InvalidArgumentError("from_line: must not be negative"));
  }
  if (request->max_lines() < 0) {
    return Finish(ctx, absl::InvalidArgumentError("max_lines: must not be negative"));
  }
  const int from = std::max(1, request->from_line());
  const int max_lines =
      request->max_lines() == 0 ? kDefaultLogLines : std::min(request->max_lines(), kMaxLogLines);
  // Asked before reading: a run that ends in between is seen as active, never the reverse.
  const bool active = runs_->IsActive(request->run_id());
  auto page = logs_->Read(request->run_id(), from, max_lines);
  if (!page.ok()) return Finish(ctx, page.status());
  for (auto& line : page->lines) response->add_lines(std::move(line));
  response->set_from_line(page->from_line);
  response->set_to_line(page->to_line);
  response->set_end(page->eof && !active);
  return Finish(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* ExecutorGrpcService::GetRuns(grpc::CallbackServerContext* ctx,
                                                       const jobwheel::v1::GetRunsRequest* request,
                                                       jobwheel::v1::GetRunsResponse* response) {
  absl::Status auth =
      AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kGetRuns);
  if (!auth.ok()) return Finish(ctx, auth);
  if (request->run_ids_size() > kMaxGetRuns) {
    return Finish(
        ctx, absl::InvalidArgumentError(absl::StrCat("run_ids: at most ", kMaxGetRuns,
                                                     " per call, got ", request->run_ids_size())));
  }
  std::vector<int64_t> ids(request->run_ids().begin(), request->run_ids().end());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] <= 0) {
      return Finish(ctx, absl::InvalidArgumentError(
                             absl::StrCat("run_ids[", i, "]: must be positive, got ", ids[i])));
    }
  }
  std::vector<jobwheel::v1::RunPresenceState> states = runs_->Presence(ids, request->fence());
  response->mutable_runs()->Reserve(static_cast<int>(states.size()));
  for (auto& state : states) *response->add_runs() = std::move(state);
  return Finish(ctx, absl::OkStatus());
}

}  // namespace jobwheel::sdk
