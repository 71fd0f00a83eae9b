#ifndef JOBWHEEL_SERVICES_DISPATCHER_GRPC_EXECUTOR_CLIENTS_H_
#define JOBWHEEL_SERVICES_DISPATCHER_GRPC_EXECUTOR_CLIENTS_H_

#include <memory>
#include <string>

#include "common/auth/caller_token.h"
#include "common/grpc/channel.h"
#include "common/grpc/stub_cache.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "services/dispatcher/executor_clients.h"

namespace jobwheel::dispatcher {

// ExecutorClients over gRPC: one channel per executor address, reused (the 4096 most recently
// used addresses). Every call carries a
// token `signer` (the dispatcher's key; not owned) made for that executor's app and address
// ("<app>@<address>"), so a token one executor sees is worth nothing at another, nor at an
// executor of another app registered at its address; none without a signer (--insecure_dev).
// Thread-safe.
class GrpcExecutorClients : public ExecutorClients {
 public:
  GrpcExecutorClients(CallerTokenSigner* signer, ClientTls tls)
      : signer_(signer),
        stubs_(std::move(tls), kMaxStubs, [](std::shared_ptr<grpc::Channel> channel) {
          return v1::ExecutorService::NewStub(channel);
        }) {}

  // The callback API: no thread waits for the executor's answer.
  void RunBatchAsync(absl::string_view app, absl::string_view address, v1::RunBatchRequest request,
                     absl::Duration deadline, RunBatchCallback done) override;
  absl::Status Beat(absl::string_view app, absl::string_view address,
                    absl::Duration deadline) override;
  absl::StatusOr<v1::IdleBeatResponse> IdleBeat(absl::string_view app, absl::string_view address,
                                                int64_t job_id, absl::Duration deadline) override;
  // Waits for a connection within the deadline (as RunBatchAsync does).
  absl::StatusOr<v1::GetRunsResponse> GetRuns(absl::string_view app, absl::string_view address,
                                              const v1::GetRunsRequest& request,
                                              absl::Duration deadline) override;

 private:
  absl::Status Prepare(grpc::ClientContext& ctx, absl::string_view app, absl::string_view address,
                       absl::Duration deadline) const;
  // One unary call on the callback API: `start(stub, ctx, request, response, on_done)` issues
  // it (e.g. stub.async()->RunBatch(...)); `done` gets the answer exactly once.
  template <typename Request, typename Response, typename Start>
  void CallAsync(absl::string_view app, absl::string_view address, Request request,
                 absl::Duration deadline, std::function<void(absl::StatusOr<Response>)> done,
                 Start start);

  static constexpr size_t kMaxStubs = 4096;
  CallerTokenSigner* const signer_;
  StubCache<v1::ExecutorService::Stub> stubs_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_GRPC_EXECUTOR_CLIENTS_H_
