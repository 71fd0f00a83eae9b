#include "services/dispatcher/trigger_pools.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

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
  const size_t runs = job_ids.size();
  const absl::Status s = SubmitAppBatchAsync(pool, "", runs, std::move(job_ids), std::move(start));
  if (accepted != nullptr) *accepted = s.ok();
}

int TriggerPools::MaxInFlight(TriggerPool pool) const {
  return std::max(
      1, pool == TriggerPool::kSlow ? options_.slow_max_in_flight : options_.fast_max_in_flight);
}

int TriggerPools::MaxPerApp(TriggerPool pool, const std::string& app) const {
  if (app.empty()) return MaxInFlight(pool);  // Calls of no app (SubmitAsync): the pool's cap.
  const double share = std::clamp(options_.max_in_flight_per_app, 0.0, 1.0);
  return std::max(1, static_cast<int>(MaxInFlight(pool) * share));
}

absl::Status TriggerPools::SubmitAppBatchAsync(TriggerPool pool, const std::string& app,
                                               size_t runs, std::vector<int64_t> job_ids,
                                               AsyncTask start) {
  std::sort(job_ids.begin(), job_ids.end());
  job_ids.erase(std::unique(job_ids.begin(), job_ids.end()), job_ids.end());
  const int max = MaxInFlight(pool);
  const int per_app = MaxPerApp(pool, app);
  bool now = false;
  size_t depth = 0, depth_runs = 0;
  {
    absl::MutexLock lock(&async_mu_);
    if (stopping_) return absl::UnavailableError("dispatcher shutting down");
    Lane& lane = LaneOf(pool);
    AppLane& a = lane.apps[app];
    if (lane.in_flight < max && a.in_flight < per_app && a.waiting.empty()) {
      ++lane.in_flight;
      ++a.in_flight;
      now = true;
    } else if (lane.waiting_runs + runs > options_.max_waiting_runs && lane.waiting_calls > 0) {
      if (a.in_flight == 0 && a.waiting.empty()) lane.apps.erase(app);
      return absl::ResourceExhaustedError(absl::StrCat(
          "dispatcher overloaded: the ", TriggerPoolName(pool), " trigger pool has ",
          lane.waiting_runs, " runs waiting for one of its ", max, " calls (at most ",
          options_.max_waiting_runs, "); the executors answer slower than runs are offered"));
    } else {
      if (a.waiting.empty()) lane.turn.push_back(app);
      a.waiting.push_back(Waiting{std::move(job_ids), runs, std::move(start)});
      lane.waiting_runs += runs;
      ++lane.waiting_calls;
    }
    depth = lane.waiting_calls;
    depth_runs = lane.waiting_runs;
  }
  if (depth_) depth_(pool, depth, depth_runs);
  if (now) StartAsync(pool, app, std::move(job_ids), std::move(start));
  return absl::OkStatus();
}

void TriggerPools::StartAsync(TriggerPool pool, std::string app, std::vector<int64_t> job_ids,
                              AsyncTask start) {
  const absl::Time started = clock_.Now();
  start([this, pool, app = std::move(app), job_ids = std::move(job_ids), started] {
    const absl::Duration took = clock_.Now() - started;
    Record(job_ids, took);
    if (latency_) latency_(pool, took);
    FinishAsync(pool, app);
  });
}

void TriggerPools::FinishAsync(TriggerPool pool, const std::string& app) {
  std::string next_app;
  Waiting next;
  size_t depth = 0, depth_runs = 0;
  {
    absl::MutexLock lock(&async_mu_);
    Lane& lane = LaneOf(pool);
    --lane.in_flight;
    auto done = lane.apps.find(app);
    if (done != lane.apps.end()) {
      --done->second.in_flight;
      if (done->second.in_flight == 0 && done->second.waiting.empty()) lane.apps.erase(done);
    }
    // The slot goes to the next app in turn that has a call waiting and room for it.
    for (size_t tries = lane.turn.size(); tries > 0 && !next.start; --tries) {
      std::string candidate = std::move(lane.turn.front());
      lane.turn.pop_front();
      AppLane& a = lane.apps[candidate];
      if (a.in_flight >= MaxPerApp(pool, candidate)) {
        lane.turn.push_back(std::move(candidate));
        continue;
      }
      next = std::move(a.waiting.front());
      a.waiting.pop_front();
      ++a.in_flight;
      ++lane.in_flight;
      lane.waiting_runs -= next.runs;
      --lane.waiting_calls;
      if (!a.waiting.empty()) lane.turn.push_back(candidate);
      next_app = std::move(candidate);
    }
    depth = lane.waiting_calls;
    depth_runs = lane.waiting_runs;
  }
  if (depth_) depth_(pool, depth, depth_runs);
  if (next.start)
    StartAsync(pool, std::move(next_app), std::move(next.job_ids), std::move(next.start));
}

void TriggerPools::Shutdown() {
  absl::MutexLock lock(&async_mu_);
  stopping_ = true;
  // Calls in flight have deadlines; the waiting ones start as those finish.
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(async_mu_) {
    return fast_lane_.in_flight == 0 && slow_lane_.in_flight == 0 &&
           fast_lane_.waiting_calls == 0 && slow_lane_.waiting_calls == 0;
  };
  async_mu_.Await(absl::Condition(&idle));
}

}  // namespace jobwheel::dispatcher
