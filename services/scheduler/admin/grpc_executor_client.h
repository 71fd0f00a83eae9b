#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_GRPC_EXECUTOR_CLIENT_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_GRPC_EXECUTOR_CLIENT_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/auth/caller_token.h"
#include "common/grpc/channel.h"
#include "common/grpc/stub_cache.h"
#include "common/time/clock.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "services/scheduler/admin/executor_client.h"

namespace jobwheel::scheduler::admin {

struct GrpcExecutorClientOptions {
  absl::Duration kill_deadline = absl::Seconds(3);
  absl::Duration log_deadline = absl::Seconds(5);
  // Cached channels, one per executor address; past this many, the least recently used one is
  // dropped (executors come and go).
  int max_channels = 1024;
};

// ExecutorClient over gRPC: one cached channel per executor address. Thread-safe.
class GrpcExecutorClient : public ExecutorClient {
 public:
  // Each call carries a token `signer` (the scheduler's key; not owned) made for the
  // executor's address, so it is worth nothing at any other executor; none without a signer
  // (--insecure_dev). A call's deadline counts from `clock`'s now.
  GrpcExecutorClient(ClientTls tls, CallerTokenSigner* signer,
                     GrpcExecutorClientOptions options = {}, Clock& clock = RealClock::Get());

  absl::StatusOr<jobwheel::v1::KillResponse> Kill(absl::string_view app, absl::string_view address,
                                                  const jobwheel::v1::KillRequest& req) override;
  absl::StatusOr<jobwheel::v1::LogResponse> Log(absl::string_view app, absl::string_view address,
                                                const jobwheel::v1::LogRequest& req) override;

 private:
  const GrpcExecutorClientOptions options_;
  CallerTokenSigner* const signer_;
  Clock& clock_;
  StubCache<jobwheel::v1::ExecutorService::StubInterface> stubs_;
};

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_GRPC_EXECUTOR_CLIENT_H_
