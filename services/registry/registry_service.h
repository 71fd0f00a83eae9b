#ifndef JOBWHEEL_SERVICES_REGISTRY_REGISTRY_SERVICE_H_
#define JOBWHEEL_SERVICES_REGISTRY_REGISTRY_SERVICE_H_

#include <set>

#include "absl/synchronization/mutex.h"
#include "common/auth/bearer.h"
#include "common/auth/token_authenticator.h"
#include "common/base/log_rate_limiter.h"
#include "common/base/work_pool.h"
#include "common/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "services/registry/address_policy.h"
#include "services/registry/executor_store.h"
#include "services/registry/executor_view.h"
#include "services/registry/registry.h"
#include "services/registry/registry_metrics.h"

namespace jobwheel::registry {

// The RegistryService gRPC surface: authenticates, then hands heartbeat streams
// to the Registry (blocking calls on the WorkPool) and serves
// ListExecutors/WatchExecutors from the ExecutorView. Heartbeat needs an EXECUTOR token for
// the registering app (checked on the pool with each Register: UNAUTHENTICATED for a missing
// or invalid token, PERMISSION_DENIED for another app's token); WatchExecutors needs a token a
// dispatcher signed for audience "registry" (`watch_policy`). ListExecutors takes an ADMIN,
// OPERATOR or VIEWER token (on the pool), which sees only the executors of apps it may read:
// naming another app is PERMISSION_DENIED. Heartbeat and ListExecutors pass the caller's
// PeerHost to the authenticator: a peer that failed authentication too often gets
// RESOURCE_EXHAUSTED for tokens the authenticator does not already know (as on the admin
// services). Thread-safe.
class RegistryService final : public v1::RegistryService::CallbackService {
 public:
  struct Options {
    // Heartbeat, and ListExecutors with API tokens. Required; must outlive this.
    TokenAuthenticator* authenticator = nullptr;
    TokenPolicy watch_policy;  // WatchExecutors: the dispatchers.
    // Optional. When set, ListExecutors for API tokens takes running, queued and
    // last_beat_time from the store's online rows (renewed about every second), as the
    // ExecutorView does not follow beats; otherwise they are as of registration.
    ExecutorStore* load_store = nullptr;
    // A watcher this many events behind is cut off (it reconnects and gets a
    // snapshot).
    size_t max_watch_backlog = 10000;
    // Heartbeat: which addresses a caller may register (its own; see AddressPolicy). Must
    // outlive this; nullptr is the strictest policy (no loopback, no allowlist).
    const AddressPolicy* address_policy = nullptr;
    // The clock of the refusal log's rate limit (one line per peer per 10 s, with a count).
    const Clock* clock = &RealClock::Get();
  };

  RegistryService(Registry& registry, ExecutorView& view, WorkPool& pool, RegistryMetrics& metrics,
                  Options options);

  grpc::ServerBidiReactor<v1::HeartbeatRequest, v1::HeartbeatResponse>* Heartbeat(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* ListExecutors(grpc::CallbackServerContext* context,
                                          const v1::ListExecutorsRequest* request,
                                          v1::ListExecutorsResponse* response) override;
  grpc::ServerWriteReactor<v1::WatchExecutorsResponse>* WatchExecutors(
      grpc::CallbackServerContext* context, const v1::WatchExecutorsRequest* request) override;

  // Ends every WatchExecutors stream with UNAVAILABLE (shutdown: watchers move
  // elsewhere).
  void CloseWatchers();

 private:
  class HeartbeatReactor;
  class WatchReactor;

  // The executors `p` may read: of `app` (PERMISSION_DENIED when it may not read it), or of
  // every app it may read when `app` is empty.
  absl::Status ListReadableExecutors(const Principal& p, const std::string& app,
                                     v1::ListExecutorsResponse* response) const;
  // Running, queued and last beat from options_.load_store (blocking; on the pool).
  void FillLoad(v1::ListExecutorsResponse* response) const;

  Registry& registry_;
  ExecutorView& view_;
  WorkPool& pool_;
  RegistryMetrics& metrics_;
  const Options options_;
  // Refused heartbeats and registrations, logged once per peer per interval with a count: a
  // client cannot flood the log.
  LogRateLimiter refusal_log_;

  absl::Mutex mu_;
  std::set<WatchReactor*> watchers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_REGISTRY_SERVICE_H_
