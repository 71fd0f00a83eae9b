#include "services/dispatcher/executor_directory.h"

namespace jobwheel::dispatcher {

bool ExecutorDirectory::Apply(const v1::WatchExecutorsResponse& event) {
  size_t size = 0;
  {
    absl::MutexLock lock(&mu_);
    switch (event.type()) {
      case v1::WATCH_EVENT_TYPE_SNAPSHOT:
        apps_.clear();
        for (const v1::Executor& e : event.executors()) apps_[e.app()][e.address()] = e;
        version_ = event.version();
        ready_ = true;
        break;
      case v1::WATCH_EVENT_TYPE_UPSERT:
        if (!ready_ || event.version() <= version_) return false;
        for (const v1::Executor& e : event.executors()) apps_[e.app()][e.address()] = e;
        version_ = event.version();
        break;
      case v1::WATCH_EVENT_TYPE_REMOVE:
        if (!ready_ || event.version() <= version_) return false;
        for (const v1::Executor& e : event.executors()) {
          auto app = apps_.find(e.app());
          if (app == apps_.end()) continue;
          app->second.erase(e.address());
          if (app->second.empty()) apps_.erase(app);
        }
        version_ = event.version();
        break;
      default:
        return false;
    }
    size = SizeLocked();
  }
  if (observer_) observer_(size);
  return true;
}

std::vector<v1::Executor> ExecutorDirectory::Executors(absl::string_view app) const {
  std::vector<v1::Executor> out;
  absl::MutexLock lock(&mu_);
  auto it = apps_.find(app);
  if (it == apps_.end()) return out;
  out.reserve(it->second.size());
  for (const auto& [address, e] : it->second) out.push_back(e);
  return out;
}

bool ExecutorDirectory::ready() const {
  absl::MutexLock lock(&mu_);
  return ready_;
}

size_t ExecutorDirectory::size() const {
  absl::MutexLock lock(&mu_);
  return SizeLocked();
}

size_t ExecutorDirectory::SizeLocked() const {
  size_t n = 0;
  for (const auto& [app, executors] : apps_) n += executors.size();
  return n;
}

}  // namespace jobwheel::dispatcher
