#include "services/xxl_gateway/identity_executor_service.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc/grpc_status.h"

namespace jobwheel::xxl {

namespace v1 = jobwheel::v1;

IdentityExecutorService::IdentityExecutorService(IdentityRuns& runs, ExecutorCallers callers,
                                                 WorkPool& pool, GatewayMetrics& metrics,
                                                 std::function<bool()> alive)
    : runs_(runs),
      callers_(std::move(callers)),
      pool_(pool),
      metrics_(metrics),
      alive_(std::move(alive)) {}

grpc::ServerUnaryReactor* IdentityExecutorService::OnPool(grpc::CallbackServerContext* ctx,
                                                          std::function<absl::Status()> work) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  const bool queued =
      pool_.Submit([reactor, work = std::move(work)] { reactor->Finish(ToGrpcStatus(work())); });
  if (!queued) {
    reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                 "xxl gateway: too many calls in progress; retry later"));
  }
  return reactor;
}

grpc::ServerUnaryReactor* IdentityExecutorService::Run(grpc::CallbackServerContext* ctx,
                                                       const v1::RunRequest* request,
                                                       v1::RunResponse* response) {
  if (absl::Status a = AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kRun);
      !a.ok()) {
    return OnPool(ctx, [a] { return a; });
  }
  return OnPool(ctx, [this, request, response]() -> absl::Status {
    auto r = runs_.Submit(*request);
    if (!r.ok()) return r.status();
    *response = std::move(*r);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* IdentityExecutorService::RunBatch(grpc::CallbackServerContext* ctx,
                                                            const v1::RunBatchRequest* request,
                                                            v1::RunBatchResponse* response) {
  if (absl::Status a =
          AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kRunBatch);
      !a.ok()) {
    return OnPool(ctx, [a] { return a; });
  }
  if (request->runs_size() == 0 || request->runs_size() > kMaxBatchRuns) {
    return OnPool(ctx, [n = request->runs_size()] {
      return absl::InvalidArgumentError(
          absl::StrCat("runs: want 1 to ", kMaxBatchRuns, " runs, got ", n));
    });
  }
  const auto queued_at = std::chrono::steady_clock::now();
  return OnPool(ctx, [this, request, response, queued_at]() -> absl::Status {
    const auto started = std::chrono::steady_clock::now();
    metrics_.Stage("queue", std::chrono::duration<double>(started - queued_at).count());
    const int n = request->runs_size();
    for (int i = 0; i < n; ++i) response->add_responses();
    auto submit = [this, request, response](int i) {
      v1::RunResponse* out = response->mutable_responses(i);
      auto r = runs_.Submit(request->runs(i));
      if (r.ok()) {
        *out = std::move(*r);
      } else if (absl::IsDeadlineExceeded(r.status())) {
        // Sent, answer lost: the ledger says RUNNING, as GetRuns will.
        out->set_disposition(v1::RUN_DISPOSITION_STARTED);
        out->set_message(std::string(r.status().message()));
      } else {
        out->set_disposition(v1::RUN_DISPOSITION_REJECTED);
        out->set_message(absl::StrCat("runs[", i, "]: ", r.status().message()));
      }
    };
    // Runs of different jobs side by side (each waits for its ledger sync and its /run), the
    // runs of one job in request order: lanes by job id, lane 0 on this thread.
    std::vector<std::vector<int>> lanes(std::min(n, kBatchLanes));
    for (int i = 0; i < n; ++i) {
      const uint64_t job = static_cast<uint64_t>(request->runs(i).job_id());
      lanes[job % lanes.size()].push_back(i);
    }
    std::vector<std::thread> threads;
    for (size_t l = 1; l < lanes.size(); ++l) {
      if (lanes[l].empty()) continue;
      threads.emplace_back([&submit, lane = &lanes[l]] {
        for (int i : *lane) submit(i);
      });
    }
    for (int i : lanes[0]) submit(i);
    for (std::thread& t : threads) t.join();
    metrics_.Stage(
        "batch", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* IdentityExecutorService::Kill(grpc::CallbackServerContext* ctx,
                                                        const v1::KillRequest* request,
                                                        v1::KillResponse* response) {
  if (absl::Status a = AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kKill);
      !a.ok()) {
    return OnPool(ctx, [a] { return a; });
  }
  return OnPool(ctx, [this, request, response]() -> absl::Status {
    if (request->run_id() <= 0) return absl::InvalidArgumentError("run_id: must be positive");
    *response = runs_.Kill(request->run_id(), request->reason());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* IdentityExecutorService::Beat(grpc::CallbackServerContext* ctx,
                                                        const v1::BeatRequest*, v1::BeatResponse*) {
  absl::Status a = AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kBeat);
  if (a.ok() && !alive_()) a = absl::UnavailableError("the XXL executor does not answer /beat");
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(a));
  return reactor;
}

grpc::ServerUnaryReactor* IdentityExecutorService::IdleBeat(grpc::CallbackServerContext* ctx,
                                                            const v1::IdleBeatRequest* request,
                                                            v1::IdleBeatResponse* response) {
  absl::Status a = AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kIdleBeat);
  if (a.ok() && request->job_id() <= 0) a = absl::InvalidArgumentError("job_id: must be positive");
  if (a.ok() && !alive_()) a = absl::UnavailableError("the XXL executor does not answer /beat");
  if (a.ok()) {
    IdentityRuns::Load load = runs_.JobLoad(request->job_id());
    response->set_running(load.running);
    response->set_queued(load.queued);
    response->set_idle(load.running == 0 && load.queued == 0);
  }
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(a));
  return reactor;
}

grpc::ServerUnaryReactor* IdentityExecutorService::Log(grpc::CallbackServerContext* ctx,
                                                       const v1::LogRequest* request,
                                                       v1::LogResponse* response) {
  if (absl::Status a = AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kLog);
      !a.ok()) {
    return OnPool(ctx, [a] { return a; });
  }
  return OnPool(ctx, [this, request, response]() -> absl::Status {
    if (request->run_id() <= 0) return absl::InvalidArgumentError("run_id: must be positive");
    if (request->from_line() < 0)
      return absl::InvalidArgumentError("from_line: must not be negative");
    if (request->max_lines() < 0)
      return absl::InvalidArgumentError("max_lines: must not be negative");
    auto page = runs_.Log(*request);
    if (!page.ok()) return page.status();
    *response = std::move(*page);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* IdentityExecutorService::GetRuns(grpc::CallbackServerContext* ctx,
                                                           const v1::GetRunsRequest* request,
                                                           v1::GetRunsResponse* response) {
  absl::Status a = AuthorizeExecutorCall(ctx->client_metadata(), callers_, ExecutorRpc::kGetRuns);
  if (a.ok() && request->run_ids_size() > kMaxGetRuns) {
    a = absl::InvalidArgumentError(absl::StrCat("run_ids: at most ", kMaxGetRuns));
  }
  for (int64_t id : request->run_ids()) {
    if (a.ok() && id <= 0) a = absl::InvalidArgumentError("run_ids: must be positive");
  }
  if (a.ok()) *response = runs_.GetRuns(*request);
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(a));
  return reactor;
}

}  // namespace jobwheel::xxl
