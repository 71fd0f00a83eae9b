#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_IDENTITY_EXECUTOR_SERVICE_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_IDENTITY_EXECUTOR_SERVICE_H_

#include <functional>
#include <map>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/auth/executor_callers.h"
#include "common/base/work_pool.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "services/xxl_gateway/gateway_metrics.h"
#include "services/xxl_gateway/identity_runs.h"

namespace jobwheel::xxl {

// The ExecutorService of one identity, on its own port: checks the caller, then runs the
// call on `pool` (calls to the XXL executor block) against the identity's IdentityRuns. Beat
// answers from the last /beat probe (`alive`). Thread-safe.
class IdentityExecutorService final : public jobwheel::v1::ExecutorService::CallbackService {
 public:
  static constexpr int kMaxBatchRuns = 1000;
  // RunBatch sends the runs of at most this many jobs side by side.
  static constexpr int kBatchLanes = 16;
  static constexpr int kMaxGetRuns = 1000;

  IdentityExecutorService(IdentityRuns& runs, ExecutorCallers callers, WorkPool& pool,
                          GatewayMetrics& metrics, std::function<bool()> alive);

  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* ctx,
                                const jobwheel::v1::RunRequest* request,
                                jobwheel::v1::RunResponse* response) override;
  grpc::ServerUnaryReactor* RunBatch(grpc::CallbackServerContext* ctx,
                                     const jobwheel::v1::RunBatchRequest* request,
                                     jobwheel::v1::RunBatchResponse* response) override;
  grpc::ServerUnaryReactor* Kill(grpc::CallbackServerContext* ctx,
                                 const jobwheel::v1::KillRequest* request,
                                 jobwheel::v1::KillResponse* response) override;
  grpc::ServerUnaryReactor* Beat(grpc::CallbackServerContext* ctx,
                                 const jobwheel::v1::BeatRequest* request,
                                 jobwheel::v1::BeatResponse* response) override;
  grpc::ServerUnaryReactor* IdleBeat(grpc::CallbackServerContext* ctx,
                                     const jobwheel::v1::IdleBeatRequest* request,
                                     jobwheel::v1::IdleBeatResponse* response) override;
  grpc::ServerUnaryReactor* Log(grpc::CallbackServerContext* ctx,
                                const jobwheel::v1::LogRequest* request,
                                jobwheel::v1::LogResponse* response) override;
  grpc::ServerUnaryReactor* GetRuns(grpc::CallbackServerContext* ctx,
                                    const jobwheel::v1::GetRunsRequest* request,
                                    jobwheel::v1::GetRunsResponse* response) override;

 private:
  // Runs `work` on the pool and finishes with its status (RESOURCE_EXHAUSTED when full).
  grpc::ServerUnaryReactor* OnPool(grpc::CallbackServerContext* ctx,
                                   std::function<absl::Status()> work);

  IdentityRuns& runs_;
  const ExecutorCallers callers_;  // Callers for "<app>@<address>" of the identity.
  WorkPool& pool_;
  GatewayMetrics& metrics_;
  const std::function<bool()> alive_;
};

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_IDENTITY_EXECUTOR_SERVICE_H_
