#ifndef JOBWHEEL_SERVICES_DISPATCHER_EXECUTOR_DIRECTORY_H_
#define JOBWHEEL_SERVICES_DISPATCHER_EXECUTOR_DIRECTORY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "jobwheel/v1/registry.pb.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::dispatcher {

// The live executors of every app, as the registry's WatchExecutors stream describes them.
// The watch client (RegistryWatcher) feeds it with Apply(); tests feed it directly.
//
// A SNAPSHOT replaces everything and sets the version baseline (a reconnect may reach another
// registry replica); UPSERT/REMOVE apply only when their version is higher than the last
// applied one. Thread-safe.
class ExecutorDirectory {
 public:
  // Called after every applied event with the number of executors known (for a gauge).
  using SizeObserver = std::function<void(size_t)>;
  explicit ExecutorDirectory(SizeObserver observer = nullptr) : observer_(std::move(observer)) {}

  // Returns false when the event was ignored (stale version or a delta before any snapshot).
  bool Apply(const v1::WatchExecutorsResponse& event);

  // The app's live executors, sorted by address.
  std::vector<v1::Executor> Executors(absl::string_view app) const;

  // True once a snapshot arrived: before that the directory knows nothing.
  bool ready() const;
  size_t size() const;

 private:
  size_t SizeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SizeObserver observer_;
  mutable absl::Mutex mu_;
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  int64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  // app → address → executor; std::map keeps addresses sorted.
  absl::flat_hash_map<std::string, std::map<std::string, v1::Executor>> apps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_EXECUTOR_DIRECTORY_H_
