#ifndef JOBWHEEL_SDK_INTERNAL_EXECUTOR_GRPC_SERVICE_H_
#define JOBWHEEL_SDK_INTERNAL_EXECUTOR_GRPC_SERVICE_H_

#include <map>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/auth/caller_token.h"
#include "common/auth/executor_callers.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "sdk/internal/run_log_store.h"
#include "sdk/internal/run_manager.h"

namespace jobwheel::sdk {

// ExecutorCallers, ExecutorRpc and AuthorizeExecutorCall: common/auth/executor_callers.h (every
// executor kind checks its callers the same way).
using ::jobwheel::AuthorizeExecutorCall;
using ::jobwheel::ExecutorCallers;
using ::jobwheel::ExecutorRpc;
using ::jobwheel::ExecutorRpcIssuer;
using ::jobwheel::ExecutorRpcName;

// The gRPC surface of an executor (jobwheel.v1.ExecutorService, callback API): checks each
// caller's token against the RPC (AuthorizeExecutorCall), maps requests to the RunManager and
// RunLogStore and their statuses to gRPC. Every call finishes inline (no call blocks for
// long). Thread-safe.
class ExecutorGrpcService final : public jobwheel::v1::ExecutorService::CallbackService {
 public:
  static constexpr int kDefaultLogLines = 1000;
  static constexpr int kMaxLogLines = 10000;
  // RunBatch: more runs than this in one call is INVALID_ARGUMENT.
  static constexpr int kMaxBatchRuns = 1000;
  // GetRuns: more run ids than this in one call is INVALID_ARGUMENT.
  static constexpr int kMaxGetRuns = 1000;

  ExecutorGrpcService(RunManager* runs, RunLogStore* logs, ExecutorCallers callers);

  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* ctx,
                                const jobwheel::v1::RunRequest* request,
                                jobwheel::v1::RunResponse* response) override;
  // Each run as Run would take it, in order; a malformed run is REJECTED naming
  // `runs[i].field`, the others still go ahead.
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
  // What this executor knows of each run id (RunManager::Presence), fencing unseen ones when
  // asked. More than kMaxGetRuns ids is INVALID_ARGUMENT naming `run_ids`, and so is an id
  // that is not positive.
  grpc::ServerUnaryReactor* GetRuns(grpc::CallbackServerContext* ctx,
                                    const jobwheel::v1::GetRunsRequest* request,
                                    jobwheel::v1::GetRunsResponse* response) override;

 private:
  RunManager* const runs_;
  RunLogStore* const logs_;
  const ExecutorCallers callers_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_EXECUTOR_GRPC_SERVICE_H_
