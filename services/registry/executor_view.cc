#include "services/registry/executor_view.h"

#include <utility>

#include "google/protobuf/util/message_differencer.h"

namespace jobwheel::registry {

ExecutorView::ExecutorView(RegistryMetrics& metrics, int64_t initial_version)
    : metrics_(metrics), version_(initial_version) {}

ExecutorView::ExecutorMap ExecutorView::EffectiveLocked(const std::string& app) const {
  auto cfg = apps_.find(app);
  if (cfg != apps_.end() && cfg->second.address_type == v1::ADDRESS_TYPE_MANUAL) {
    ExecutorMap out;
    for (const std::string& address : cfg->second.manual_addresses) {
      v1::Executor e;
      e.set_app(app);
      e.set_address(address);
      out[address] = std::move(e);
    }
    return out;
  }
  auto it = registered_.find(app);
  return it == registered_.end() ? ExecutorMap() : it->second;
}

std::set<std::string> ExecutorView::AllAppsLocked() const {
  std::set<std::string> apps;
  for (const auto& [app, unused] : registered_) apps.insert(app);
  for (const auto& [app, unused] : apps_) apps.insert(app);
  return apps;
}

void ExecutorView::EmitLocked(const std::string& app, v1::WatchEventType type,
                              std::vector<v1::Executor> executors) {
  v1::WatchExecutorsResponse event;
  event.set_version(++version_);
  event.set_type(type);
  for (v1::Executor& e : executors) *event.add_executors() = std::move(e);
  for (const auto& [id, sub] : subscribers_) {
    if (sub.app.empty() || sub.app == app) sub.listener(event);
  }
}

void ExecutorView::DiffLocked(const std::string& app, const ExecutorMap& before,
                              const ExecutorMap& after) {
  std::vector<v1::Executor> removed, upserted;
  for (const auto& [address, e] : before) {
    if (after.count(address) == 0) removed.push_back(e);
  }
  for (const auto& [address, e] : after) {
    auto it = before.find(address);
    if (it == before.end() || !google::protobuf::util::MessageDifferencer::Equals(it->second, e)) {
      upserted.push_back(e);
    }
  }
  if (!removed.empty()) EmitLocked(app, v1::WATCH_EVENT_TYPE_REMOVE, std::move(removed));
  if (!upserted.empty()) EmitLocked(app, v1::WATCH_EVENT_TYPE_UPSERT, std::move(upserted));
}

void ExecutorView::MutateLocked(const std::set<std::string>& apps,
                                const std::function<void()>& mutate) {
  std::map<std::string, ExecutorMap> before;
  for (const std::string& app : apps) before[app] = EffectiveLocked(app);
  mutate();
  for (const std::string& app : apps) {
    DiffLocked(app, before[app], EffectiveLocked(app));
    auto it = registered_.find(app);
    metrics_.SetExecutorsOnline(app, it == registered_.end() ? 0 : it->second.size());
  }
}

void ExecutorView::Reset(const std::vector<v1::Executor>& online,
                         const std::vector<AppConfig>& apps) {
  absl::MutexLock lock(&mu_);
  std::set<std::string> touched = AllAppsLocked();
  for (const v1::Executor& e : online) touched.insert(e.app());
  for (const AppConfig& a : apps) touched.insert(a.name);
  MutateLocked(touched, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    registered_.clear();
    apps_.clear();
    for (const v1::Executor& e : online) registered_[e.app()][e.address()] = e;
    for (const AppConfig& a : apps) apps_[a.name] = a;
  });
}

void ExecutorView::ApplyExecutors(const std::vector<ExecutorKey>& keys,
                                  const std::vector<v1::Executor>& online) {
  absl::MutexLock lock(&mu_);
  std::set<std::string> touched;
  for (const ExecutorKey& k : keys) touched.insert(k.app);
  for (const v1::Executor& e : online) touched.insert(e.app());
  MutateLocked(touched, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const ExecutorKey& k : keys) {
      auto it = registered_.find(k.app);
      if (it == registered_.end()) continue;
      it->second.erase(k.address);
      if (it->second.empty()) registered_.erase(it);
    }
    for (const v1::Executor& e : online) registered_[e.app()][e.address()] = e;
  });
}

void ExecutorView::ApplyApps(const std::vector<std::string>& names,
                             const std::vector<AppConfig>& present) {
  absl::MutexLock lock(&mu_);
  std::set<std::string> touched(names.begin(), names.end());
  for (const AppConfig& a : present) touched.insert(a.name);
  MutateLocked(touched, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const std::string& name : names) apps_.erase(name);
    for (const AppConfig& a : present) apps_[a.name] = a;
  });
}

std::vector<v1::Executor> ExecutorView::List(const std::string& app) const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Executor> out;
  if (!app.empty()) {
    for (auto& [address, e] : EffectiveLocked(app)) out.push_back(std::move(e));
    return out;
  }
  for (const std::string& a : AllAppsLocked()) {
    for (auto& [address, e] : EffectiveLocked(a)) out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> ExecutorView::RegisteredAddresses(const std::string& app) const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  auto it = registered_.find(app);
  if (it == registered_.end()) return out;
  for (const auto& [address, e] : it->second) out.push_back(address);
  return out;
}

int64_t ExecutorView::Subscribe(const std::string& app, Listener listener) {
  absl::MutexLock lock(&mu_);
  v1::WatchExecutorsResponse snapshot;
  snapshot.set_version(version_);
  snapshot.set_type(v1::WATCH_EVENT_TYPE_SNAPSHOT);
  if (!app.empty()) {
    for (auto& [address, e] : EffectiveLocked(app)) *snapshot.add_executors() = std::move(e);
  } else {
    for (const std::string& a : AllAppsLocked()) {
      for (auto& [address, e] : EffectiveLocked(a)) *snapshot.add_executors() = std::move(e);
    }
  }
  listener(snapshot);
  const int64_t id = next_subscriber_++;
  subscribers_[id] = Subscriber{app, std::move(listener)};
  return id;
}

void ExecutorView::Unsubscribe(int64_t id) {
  absl::MutexLock lock(&mu_);
  subscribers_.erase(id);
}

int64_t ExecutorView::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

}  // namespace jobwheel::registry
