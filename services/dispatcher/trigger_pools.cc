#include "services/dispatcher/trigger_pools.h"

#include <utility>

namespace jobwheel::dispatcher {
namespace {

int64_t MinuteOf(absl::Time t) { return absl::ToUnixSeconds(t) / 60; }

}  // namespace

const char* TriggerPoolName(TriggerPool pool) {
  return pool == TriggerPool::kSlow ? "slow" : "fast";
}

TriggerPools::TriggerPools(Clock& clock, Options options, LatencyObserver latency,
                           DepthObserver depth)
    : clock_(clock), options_(options), latency_(std::move(latency)) {
  auto observer = [depth](TriggerPool pool) -> std::function<void(size_t)> {
    if (!depth) return nullptr;
    return [depth, pool](size_t n) { depth(pool, n); };
  };
  fast_ = std::make_unique<WorkPool>("trigger-fast", options_.fast_threads, 0,
                                     observer(TriggerPool::kFast));
  slow_ = std::make_unique<WorkPool>("trigger-slow", options_.slow_threads, 0,
                                     observer(TriggerPool::kSlow));
}

TriggerPools::~TriggerPools() { Shutdown(); }

TriggerPool TriggerPools::PoolFor(int64_t job_id) const {
  absl::MutexLock lock(&mu_);
  if (minute_ != MinuteOf(clock_.Now())) return TriggerPool::kFast;
  auto it = slow_counts_.find(job_id);
  return it != slow_counts_.end() && it->second > options_.slow_limit ? TriggerPool::kSlow
                                                                      : TriggerPool::kFast;
}

TriggerPool TriggerPools::Submit(int64_t job_id, std::function<void()> task, bool* accepted) {
  const TriggerPool pool = PoolFor(job_id);
  auto wrapped = [this, job_id, pool, task = std::move(task)] {
    const absl::Time start = clock_.Now();
    task();
    const absl::Duration took = clock_.Now() - start;
    Record(job_id, took);
    if (latency_) latency_(pool, took);
  };
  const bool ok = (pool == TriggerPool::kSlow ? slow_ : fast_)->Submit(std::move(wrapped));
  if (accepted != nullptr) *accepted = ok;
  return pool;
}

void TriggerPools::Record(int64_t job_id, absl::Duration took) {
  const int64_t minute = MinuteOf(clock_.Now());
  absl::MutexLock lock(&mu_);
  if (minute != minute_) {
    minute_ = minute;
    slow_counts_.clear();
  }
  if (took > options_.slow_threshold) ++slow_counts_[job_id];
}

void TriggerPools::Shutdown() {
  fast_->Shutdown();
  slow_->Shutdown();
}

}  // namespace jobwheel::dispatcher
