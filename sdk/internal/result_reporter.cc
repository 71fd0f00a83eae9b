#include "sdk/internal/result_reporter.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/model/proto_enums.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {

ResultReporter::ResultReporter(ResultSpool* spool, DispatcherClient* client, Clock& clock,
                               ExecutorMetrics& metrics, ResultReporterOptions options)
    : spool_(spool),
      client_(client),
      clock_(clock),
      metrics_(metrics),
      options_(options),
      next_attempt_(absl::InfinitePast()),
      backoff_(options.initial_backoff, options.max_backoff) {}

ResultReporter::~ResultReporter() { Shutdown(); }

absl::Status ResultReporter::Start() {
  auto loaded = spool_->LoadAll();
  if (!loaded.ok()) return loaded.status();
  absl::MutexLock lock(&mu_);
  if (started_) return absl::OkStatus();
  started_ = true;
  for (auto& r : *loaded) {
    const int64_t run_id = r.run_id();
    pending_[run_id] = Entry{std::move(r), absl::InfinitePast(), options_.unacked_retry};
  }
  if (!loaded->empty()) {
    spdlog::info("result spool: {} result(s) from an earlier run will be resent", loaded->size());
  }
  metrics_.spool_size.Set(static_cast<double>(pending_.size()));
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void ResultReporter::Submit(const jobwheel::v1::RunResult& result) {
  // Durable before it is sent: the sender syncs the spool first (see Loop).
  absl::Status st = spool_->Append(result);
  if (!st.ok()) {
    spdlog::error("run {}: cannot spool result ({}); keeping it in memory only", result.run_id(),
                  st.ToString());
  }
  absl::MutexLock lock(&mu_);
  unsynced_ = true;
  Entry& e = pending_[result.run_id()];
  e.result = result;
  e.in_flight = false;
  e.next_attempt = absl::InfinitePast();
  e.retry = options_.unacked_retry;
  metrics_.spool_size.Set(static_cast<double>(pending_.size()));
  wake_ = true;
}

size_t ResultReporter::pending() const {
  absl::MutexLock lock(&mu_);
  return pending_.size();
}

size_t ResultReporter::Flush(absl::Duration timeout) {
  const absl::Time deadline = clock_.Now() + timeout;
  absl::MutexLock lock(&mu_);
  if (!started_ || stop_ || client_ == nullptr) return pending_.size();
  flushing_ = true;
  // Retry at once rather than after a long backoff.
  next_attempt_ = absl::InfinitePast();
  for (auto& [id, e] : pending_) e.next_attempt = absl::InfinitePast();
  wake_ = true;
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pending_.empty() || stop_; };
  clock_.AwaitWithDeadline(&mu_, absl::Condition(&done), deadline);
  flushing_ = false;
  return pending_.size();
}

void ResultReporter::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  // What was submitted since the last sync is on disk for the next start.
  absl::Status st = spool_->Sync();
  if (!st.ok()) spdlog::error("result spool: {}", st.ToString());
}

void ResultReporter::Loop() {
  auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return wake_ || stop_; };
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    wake_ = false;
    if (unsynced_) {
      // Everything Submit()ted so far goes to disk in one sync, before any of it is sent.
      // Outside the lock: Submit must not wait for the disk.
      unsynced_ = false;
      mu_.Unlock();
      absl::Status st = spool_->Sync();
      mu_.Lock();
      if (!st.ok()) spdlog::error("result spool: {}", st.ToString());
      continue;
    }
    const absl::Time now = clock_.Now();
    std::vector<jobwheel::v1::RunResult> batch;
    absl::Time next_ready = absl::InfiniteFuture();
    if (client_ != nullptr && now >= next_attempt_) {
      for (auto& [id, e] : pending_) {
        if (e.next_attempt <= now) {
          if (static_cast<int>(batch.size()) < options_.max_batch) {
            e.in_flight = true;
            batch.push_back(e.result);
          } else {
            // A full batch: the rest waits for the next round (no need to look at thousands
            // of backlogged results for every batch sent).
            next_ready = now;
            break;
          }
        } else {
          next_ready = std::min(next_ready, e.next_attempt);
        }
      }
    } else if (client_ != nullptr && !pending_.empty()) {
      next_ready = next_attempt_;
    }
    if (batch.empty()) {
      if (next_ready == absl::InfiniteFuture()) {
        mu_.Await(absl::Condition(&woken));
      } else {
        clock_.AwaitWithDeadline(&mu_, absl::Condition(&woken),
                                 std::min(now + options_.poll_interval, next_ready));
      }
      continue;
    }

    mu_.Unlock();
    absl::StatusOr<ReportAnswer> acked = client_->ReportResults(batch);
    mu_.Lock();

    const absl::Time after = clock_.Now();
    if (!acked.ok()) {
      ++failures_;
      if (failures_ == 1 || failures_ % 20 == 0) {
        spdlog::warn("reporting {} result(s) failed ({} attempt(s)): {}; they stay spooled",
                     batch.size(), failures_, acked.status().ToString());
      }
      // While flushing (shutdown), retry at least every 200 ms.
      const absl::Duration cap = flushing_ ? absl::Milliseconds(200) : absl::InfiniteDuration();
      next_attempt_ = after + backoff_.Next(bitgen_, cap);
      for (const auto& r : batch) {
        auto it = pending_.find(r.run_id());
        if (it != pending_.end()) it->second.in_flight = false;
      }
    } else {
      if (failures_ > 0) spdlog::info("dispatcher reachable again; reporting results");
      failures_ = 0;
      backoff_.Reset();
      next_attempt_ = absl::InfinitePast();
      // Acked or refused for good: done with, off the spool. A result re-submitted while in
      // flight is kept: it may differ from what was answered.
      auto settle = [&](int64_t id, bool refused) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto it = pending_.find(id);
        if (it == pending_.end() || !it->second.in_flight) return;
        if (refused) {
          // Sending it again would be refused again. Logged once, here.
          spdlog::error(
              "run {}: the dispatcher refused its {} result for good (no such run, or "
              "a missing or wrong result key); dropped",
              id, RunStatusShortName(it->second.result.status()));
          metrics_.results_refused.Increment();
        }
        pending_.erase(it);
        absl::Status st = spool_->Remove(id);
        if (!st.ok()) spdlog::warn("result spool: {}", st.ToString());
      };
      for (int64_t id : acked->acked) settle(id, /*refused=*/false);
      for (int64_t id : acked->refused) settle(id, /*refused=*/true);
      for (const auto& r : batch) {
        auto it = pending_.find(r.run_id());
        if (it == pending_.end() || !it->second.in_flight) continue;
        Entry& e = it->second;
        e.in_flight = false;
        e.next_attempt = after + e.retry;
        spdlog::warn("run {}: dispatcher did not acknowledge the result; retrying in {}",
                     r.run_id(), absl::FormatDuration(e.retry));
        e.retry = std::min(e.retry * 2, absl::Seconds(60));
      }
    }
    metrics_.spool_size.Set(static_cast<double>(pending_.size()));
  }
}

}  // namespace jobwheel::sdk
