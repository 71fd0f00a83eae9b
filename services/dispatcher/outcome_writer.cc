#include "services/dispatcher/outcome_writer.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "spdlog/spdlog.h"

namespace jobwheel::dispatcher {

OutcomeWriter::OutcomeWriter(DispatchStore& store, DispatcherMetrics& metrics, Clock& clock,
                             Options options)
    : store_(store), metrics_(metrics), clock_(clock), options_(options) {}

OutcomeWriter::~OutcomeWriter() { Shutdown(); }

void OutcomeWriter::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void OutcomeWriter::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

size_t OutcomeWriter::pending() const {
  absl::MutexLock lock(&mu_);
  return outcomes_.size() + writing_ + held_.size() + folding_;
}

size_t OutcomeWriter::held() const {
  absl::MutexLock lock(&mu_);
  return held_.size();
}

void OutcomeWriter::Enqueue(TriggerOutcome outcome) {
  absl::MutexLock lock(&mu_);
  HoldOrQueueLocked(std::move(outcome));
}

void OutcomeWriter::HoldOrQueueLocked(TriggerOutcome outcome) {
  if (outcome.status != v1::RUN_STATUS_RUNNING ||
      options_.trigger_write_delay <= absl::ZeroDuration() || stopping_ ||
      held_by_run_.contains(outcome.run_id)) {
    outcomes_.push_back(std::move(outcome));
    return;
  }
  const int64_t run_id = outcome.run_id;
  const absl::Time due = outcome.at + options_.trigger_write_delay;
  held_by_run_.emplace(run_id, held_.emplace(due, std::move(outcome)));
}

void OutcomeWriter::ReleaseDueLocked(absl::Time now) {
  while (!held_.empty() && (stopping_ || held_.begin()->first <= now)) {
    auto first = held_.begin();
    held_by_run_.erase(first->second.run_id);
    outcomes_.push_back(std::move(first->second));
    held_.erase(first);
  }
}

std::vector<TriggerOutcome> OutcomeWriter::TakeHeld(const std::vector<v1::RunResult>& results) {
  std::vector<TriggerOutcome> taken;
  absl::MutexLock lock(&mu_);
  if (held_by_run_.empty()) return taken;
  for (const v1::RunResult& r : results) {
    auto it = held_by_run_.find(r.run_id());
    if (it == held_by_run_.end()) continue;
    taken.push_back(std::move(it->second->second));
    held_.erase(it->second);
    held_by_run_.erase(it);
  }
  folding_ += taken.size();
  return taken;
}

void OutcomeWriter::EndFold(size_t taken, std::vector<TriggerOutcome> put_back) {
  if (taken == 0) return;
  absl::MutexLock lock(&mu_);
  // Back under their first due time: an answer whose time has passed is written next.
  for (TriggerOutcome& o : put_back) HoldOrQueueLocked(std::move(o));
  folding_ -= taken;
}

void OutcomeWriter::Loop() {
  while (true) {
    std::vector<TriggerOutcome> batch;
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        ReleaseDueLocked(clock_.Now());  // At shutdown: every held answer.
        if (!outcomes_.empty()) break;
        // Stopping and drained; a result write still carrying held answers may give some
        // back, so wait for it.
        if (stopping_ && folding_ == 0) return;
        // Wait for an answer to write: a new one, the earliest held one due, one held or put
        // back due earlier than that, stop, or the last carried answers settled at shutdown.
        const absl::Time due = held_.empty() ? absl::InfiniteFuture() : held_.begin()->first;
        const bool was_stopping = stopping_;
        auto ready = [this, due, was_stopping]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return !outcomes_.empty() || stopping_ != was_stopping || (stopping_ && folding_ == 0) ||
                 (!held_.empty() && held_.begin()->first < due);
        };
        if (due == absl::InfiniteFuture()) {
          mu_.Await(absl::Condition(&ready));
        } else {
          clock_.AwaitWithDeadline(&mu_, absl::Condition(&ready), due);
        }
      }
      stopping = stopping_;
      const size_t n = std::min(outcomes_.size(), options_.max_outcomes_per_write);
      batch.assign(std::make_move_iterator(outcomes_.begin()),
                   std::make_move_iterator(outcomes_.begin() + n));
      outcomes_.erase(outcomes_.begin(), outcomes_.begin() + n);
      writing_ = batch.size();
    }
    absl::StatusOr<std::vector<int64_t>> finished = store_.RecordTriggerOutcomes(batch);
    if (finished.ok()) {
      if (!finished->empty()) {
        absl::flat_hash_set<int64_t> done(finished->begin(), finished->end());
        for (const TriggerOutcome& o : batch) {
          if (done.contains(o.run_id)) metrics_.RunFinished(o.status);
        }
      }
      absl::MutexLock lock(&mu_);
      writing_ = 0;
      continue;
    }
    spdlog::error("recording {} trigger answers failed: {}", batch.size(),
                  finished.status().ToString());
    absl::MutexLock lock(&mu_);
    writing_ = 0;
    if (stopping) {
      // Give up at shutdown: the runs stay PENDING until the scheduler's monitor ends them.
      spdlog::error("shutting down: dropping {} unwritten trigger answers", batch.size());
      continue;
    }
    outcomes_.insert(outcomes_.begin(), std::make_move_iterator(batch.begin()),
                     std::make_move_iterator(batch.end()));
    auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&stop), clock_.Now() + options_.write_retry);
  }
}

}  // namespace jobwheel::dispatcher
