#ifndef JOBWHEEL_SERVICES_REGISTRY_EXECUTOR_VIEW_H_
#define JOBWHEEL_SERVICES_REGISTRY_EXECUTOR_VIEW_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "jobwheel/v1/registry.pb.h"
#include "services/registry/executor_store.h"
#include "services/registry/registry_metrics.h"

namespace jobwheel::registry {

// This replica's in-memory copy of the live executor set of all replicas, fed
// by the change feed (ViewSyncer), and the fan-out of its changes to
// WatchExecutors subscribers.
//
// The set an app exposes ("effective" set) is its online registered executors,
// or for a MANUAL app its manual addresses (as executors with only app and
// address filled). Every change to an effective set is one event with the next
// version: per app, first a REMOVE (if any left), then an UPSERT (if any came
// or changed). Versions are per replica, strictly increasing, starting at the
// value given to the constructor. Thread-safe; listeners are called with the
// view's lock held and must not call back into the view.
class ExecutorView {
 public:
  using Listener = std::function<void(const v1::WatchExecutorsResponse&)>;

  ExecutorView(RegistryMetrics& metrics, int64_t initial_version);

  // Replaces the whole state (after (re)subscribing to the feed), emitting the
  // differences.
  void Reset(const std::vector<v1::Executor>& online, const std::vector<AppConfig>& apps);
  // For each key: its row in `online` if present (upsert), else offline
  // (remove).
  void ApplyExecutors(const std::vector<ExecutorKey>& keys,
                      const std::vector<v1::Executor>& online);
  // For each name: its config in `present` if there, else the app row is gone
  // (AUTO).
  void ApplyApps(const std::vector<std::string>& names, const std::vector<AppConfig>& present);

  // The effective set of `app`, or of all apps when empty.
  std::vector<v1::Executor> List(const std::string& app) const;
  // Addresses of the online registered executors of `app` (whatever its address
  // type).
  std::vector<std::string> RegisteredAddresses(const std::string& app) const;

  // Calls `listener` at once with a SNAPSHOT of `app` (all apps when empty),
  // then with each later event concerning it. Returns an id for Unsubscribe;
  // after Unsubscribe returns the listener is not called again.
  int64_t Subscribe(const std::string& app, Listener listener);
  void Unsubscribe(int64_t id);

  int64_t version() const;

 private:
  using ExecutorMap = std::map<std::string, v1::Executor>;  // By address.

  ExecutorMap EffectiveLocked(const std::string& app) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::set<std::string> AllAppsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EmitLocked(const std::string& app, v1::WatchEventType type,
                  std::vector<v1::Executor> executors) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DiffLocked(const std::string& app, const ExecutorMap& before, const ExecutorMap& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `mutate` and emits the differences of the effective sets of `apps`.
  void MutateLocked(const std::set<std::string>& apps, const std::function<void()>& mutate)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct Subscriber {
    std::string app;
    Listener listener;
  };

  RegistryMetrics& metrics_;
  mutable absl::Mutex mu_;
  std::map<std::string, ExecutorMap> registered_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, AppConfig> apps_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, Subscriber> subscribers_ ABSL_GUARDED_BY(mu_);
  int64_t version_ ABSL_GUARDED_BY(mu_);
  int64_t next_subscriber_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_EXECUTOR_VIEW_H_
