#ifndef JOBWHEEL_SERVICES_REGISTRY_VIEW_SYNCER_H_
#define JOBWHEEL_SERVICES_REGISTRY_VIEW_SYNCER_H_

#include <memory>
#include <thread>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/backoff.h"
#include "common/time/clock.h"
#include "services/registry/executor_store.h"
#include "services/registry/executor_view.h"
#include "services/registry/registry_metrics.h"

namespace jobwheel::registry {

// Keeps an ExecutorView in step with the store: subscribes to the change feed,
// loads the full state, then re-reads each announced row and applies it. After
// losing the feed it reconnects (with backoff, waiting on `clock`) and reloads everything;
// it also reloads every `resync_interval` as a safety net. Start() once, Shutdown()
// (idempotent, joining) before destruction.
class ViewSyncer {
 public:
  struct Options {
    absl::Duration wait_slice = absl::Milliseconds(200);
    absl::Duration resync_interval = absl::Seconds(60);
    // Reconnect waits: jittered, doubling from initial_backoff up to max_backoff.
    absl::Duration initial_backoff = absl::Milliseconds(50);
    absl::Duration max_backoff = absl::Seconds(2);
  };

  ViewSyncer(ExecutorStore& store, std::unique_ptr<ChangeFeed> feed, ExecutorView& view,
             RegistryMetrics& metrics, Clock& clock, Options options);
  ~ViewSyncer();

  // Subscribes and loads the initial state synchronously (so the view is
  // complete when the server starts serving), then starts the background
  // thread.
  absl::Status Start();
  void Shutdown();

  // One step of the loop (exposed for tests): waits for changes up to
  // wait_slice and applies them; reconnects and reloads when needed.
  absl::Status Step();

 private:
  absl::Status ConnectAndLoad();
  absl::Status Load();
  void Loop();

  ExecutorStore& store_;
  std::unique_ptr<ChangeFeed> feed_;
  ExecutorView& view_;
  RegistryMetrics& metrics_;
  Clock& clock_;
  const Options options_;
  bool connected_ = false;
  absl::Time last_load_ = absl::InfinitePast();
  Backoff backoff_;      // Loop thread only.
  absl::BitGen bitgen_;  // Loop thread only: the backoff's jitter.

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_VIEW_SYNCER_H_
