#include "services/registry/view_syncer.h"

#include <algorithm>
#include <set>
#include <utility>

#include "spdlog/spdlog.h"

namespace jobwheel::registry {

ViewSyncer::ViewSyncer(ExecutorStore& store, std::unique_ptr<ChangeFeed> feed, ExecutorView& view,
                       RegistryMetrics& metrics, Clock& clock, Options options)
    : store_(store),
      feed_(std::move(feed)),
      view_(view),
      metrics_(metrics),
      clock_(clock),
      options_(options),
      backoff_(options.initial_backoff, options.max_backoff) {}

ViewSyncer::~ViewSyncer() { Shutdown(); }

absl::Status ViewSyncer::Load() {
  auto online = store_.ListOnline();
  if (!online.ok()) return online.status();
  auto apps = store_.ListAppConfigs();
  if (!apps.ok()) return apps.status();
  view_.Reset(*online, *apps);
  last_load_ = clock_.Now();
  return absl::OkStatus();
}

absl::Status ViewSyncer::ConnectAndLoad() {
  connected_ = false;
  // Subscribe first, so nothing committed after the load is missed.
  absl::Status s = feed_->Connect();
  if (!s.ok()) return s;
  s = Load();
  if (!s.ok()) return s;
  connected_ = true;
  return absl::OkStatus();
}

absl::Status ViewSyncer::Start() {
  absl::Status s = ConnectAndLoad();
  if (!s.ok()) return s;
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void ViewSyncer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status ViewSyncer::Step() {
  if (!connected_) {
    absl::Status s = ConnectAndLoad();
    if (!s.ok()) return s;
  }
  auto changes = feed_->Wait(options_.wait_slice);
  if (!changes.ok()) {
    connected_ = false;
    return changes.status();
  }
  const absl::Time now = clock_.Now();
  std::set<ExecutorKey> keys;
  std::set<std::string> apps;
  for (const Change& c : *changes) {
    metrics_.notify_lag.Observe(std::max(0.0, absl::ToDoubleSeconds(now - c.committed_at)));
    if (c.kind == Change::Kind::kExecutor) {
      keys.insert({c.app, c.address});
    } else {
      apps.insert(c.app);
    }
  }
  if (!apps.empty()) {
    std::vector<std::string> names(apps.begin(), apps.end());
    auto configs = store_.GetAppConfigs(names);
    if (!configs.ok()) {
      connected_ = false;  // Reload everything once the database answers again.
      return configs.status();
    }
    view_.ApplyApps(names, *configs);
  }
  if (!keys.empty()) {
    std::vector<ExecutorKey> key_list(keys.begin(), keys.end());
    auto rows = store_.GetOnline(key_list);
    if (!rows.ok()) {
      connected_ = false;
      return rows.status();
    }
    view_.ApplyExecutors(key_list, *rows);
  }
  if (clock_.Now() - last_load_ >= options_.resync_interval) return Load();
  return absl::OkStatus();
}

void ViewSyncer::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    absl::Status s = Step();
    if (s.ok()) {
      backoff_.Reset();
      continue;
    }
    const absl::Duration delay = backoff_.Next(bitgen_);
    spdlog::warn("registry view sync: {}; retrying in {}", s.ToString(),
                 absl::FormatDuration(delay));
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping), clock_.Now() + delay)) return;
  }
}

}  // namespace jobwheel::registry
