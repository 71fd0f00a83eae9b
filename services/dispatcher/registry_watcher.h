#ifndef JOBWHEEL_SERVICES_DISPATCHER_REGISTRY_WATCHER_H_
#define JOBWHEEL_SERVICES_DISPATCHER_REGISTRY_WATCHER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/auth/caller_token.h"
#include "common/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "services/dispatcher/executor_directory.h"

namespace jobwheel::dispatcher {

// Keeps one WatchExecutors stream (all apps) open to the registry and applies its events to
// an ExecutorDirectory. The channel balances over every registry replica in its target, so a
// reconnect (with exponential backoff and jitter) may land on another replica; its snapshot
// then replaces the cache. Never polls. While disconnected the cache keeps its last state.
// Start() once, Shutdown() (idempotent, joining) before destruction.
class RegistryWatcher {
 public:
  struct Options {
    // Signs the watch's token (audience "registry") with the dispatcher's key; not owned.
    // Null: no token (--insecure_dev).
    CallerTokenSigner* signer = nullptr;
    absl::Duration initial_backoff = absl::Milliseconds(200);
    absl::Duration max_backoff = absl::Seconds(5);
  };

  // The backoff between reconnections is waited on `clock`.
  RegistryWatcher(std::unique_ptr<v1::RegistryService::StubInterface> stub,
                  ExecutorDirectory& directory, Clock& clock, Options options);
  ~RegistryWatcher();

  void Start();
  void Shutdown();
  bool connected() const;

 private:
  void Loop();

  std::unique_ptr<v1::RegistryService::StubInterface> stub_;
  ExecutorDirectory& directory_;
  Clock& clock_;
  const Options options_;
  std::thread thread_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_REGISTRY_WATCHER_H_
