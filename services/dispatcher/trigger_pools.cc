#include "services/dispatcher/trigger_pools.h"

#include <algorithm>
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
    : clock_(clock), options_(options), latency_(std::move(latency)), depth_(depth) {}

TriggerPools::~TriggerPools() { Shutdown(); }

TriggerPool TriggerPools::PoolFor(int64_t job_id) const {
  absl::MutexLock lock(&mu_);
  if (minute_ != MinuteOf(clock_.Now())) return TriggerPool::kFast;
  auto it = slow_counts_.find(job_id);
  return it != slow_counts_.end() && it->second > options_.slow_limit ? TriggerPool::kSlow
                                                                      : TriggerPool::kFast;
}

void TriggerPools::Record(const std::vector<int64_t>& job_ids, absl::Duration took) {
  const int64_t minute = MinuteOf(clock_.Now());
  absl::MutexLock lock(&mu_);
  if (minute != minute_) {
    minute_ = minute;
    slow_counts_.clear();
  }
  if (took <= options_.slow_threshold) return;
  for (int64_t job_id : job_ids) ++slow_counts_[job_id];
}

TriggerPool TriggerPools::SubmitAsync(int64_t job_id, AsyncTask start, bool* accepted) {
  const TriggerPool pool = PoolFor(job_id);
  SubmitBatchAsync(pool, {job_id}, std::move(start), accepted);
  return pool;
}

void TriggerPools::SubmitBatchAsync(TriggerPool pool, std::vector<int64_t> job_ids, AsyncTask start,
                                    bool* accepted) {
  std::sort(job_ids.begin(), job_ids.end());
  job_ids.erase(std::unique(job_ids.begin(), job_ids.end()), job_ids.end());
  const int max = std::max(
      1, pool == TriggerPool::kSlow ? options_.slow_max_in_flight : options_.fast_max_in_flight);
  bool now = false;
  size_t depth = 0;
  {
    absl::MutexLock lock(&async_mu_);
    if (stopping_) {
      if (accepted != nullptr) *accepted = false;
      return;
    }
    Lane& lane = LaneOf(pool);
    if (lane.in_flight < max) {
      ++lane.in_flight;
      now = true;
    } else {
      lane.waiting.emplace_back(std::move(job_ids), std::move(start));
    }
    depth = lane.waiting.size();
  }
  if (accepted != nullptr) *accepted = true;
  if (depth_) depth_(pool, depth);
  if (now) StartAsync(pool, std::move(job_ids), std::move(start));
}

void TriggerPools::StartAsync(TriggerPool pool, std::vector<int64_t> job_ids, AsyncTask start) {
  const absl::Time started = clock_.Now();
  start([this, pool, job_ids = std::move(job_ids), started] {
    const absl::Duration took = clock_.Now() - started;
    Record(job_ids, took);
    if (latency_) latency_(pool, took);
    FinishAsync(pool);
  });
}

void TriggerPools::FinishAsync(TriggerPool pool) {
  std::vector<int64_t> next_jobs;
  AsyncTask next;
  size_t depth = 0;
  {
    absl::MutexLock lock(&async_mu_);
    Lane& lane = LaneOf(pool);
    if (lane.waiting.empty()) {
      --lane.in_flight;  // The slot is free.
    } else {
      // The slot goes straight to the longest waiting call.
      next_jobs = std::move(lane.waiting.front().first);
      next = std::move(lane.waiting.front().second);
      lane.waiting.pop_front();
    }
    depth = lane.waiting.size();
  }
  if (depth_) depth_(pool, depth);
  if (next) StartAsync(pool, std::move(next_jobs), std::move(next));
}

void TriggerPools::Shutdown() {
  absl::MutexLock lock(&async_mu_);
  stopping_ = true;
  // Calls in flight have deadlines; the waiting ones start as those finish.
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(async_mu_) {
    return fast_lane_.in_flight == 0 && slow_lane_.in_flight == 0 && fast_lane_.waiting.empty() &&
           slow_lane_.waiting.empty();
  };
  async_mu_.Await(absl::Condition(&idle));
}

}  // namespace jobwheel::dispatcher
