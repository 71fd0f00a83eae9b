#include "services/scheduler/alarm_sender.h"

#include <algorithm>
#include <vector>

#include "common/base/backoff.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {

AlarmSender::AlarmSender(Options options, AlarmOutbox& outbox, AlarmPoster& poster, Clock& clock,
                         SchedulerMetrics& metrics)
    : options_(options), outbox_(outbox), poster_(poster), clock_(clock), metrics_(metrics) {}

AlarmSender::~AlarmSender() { Shutdown(); }

void AlarmSender::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void AlarmSender::Shutdown() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void AlarmSender::Loop() {
  bool more = false;  // The last batch was full: go on at once.
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      if (!more && clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping_),
                                            clock_.Now() + options_.interval)) {
        return;
      }
    }
    more = false;
    if (!outbox_.IsLeader()) continue;
    absl::StatusOr<Counts> counts = RunOnce();
    if (!counts.ok()) {
      if (counts.status().code() != absl::StatusCode::kFailedPrecondition) {
        spdlog::warn("alarm sender: {}", counts.status().ToString());
      }
      continue;
    }
    more = counts->failed == 0 && counts->sent >= options_.batch;
  }
}

absl::Duration AlarmSender::BackoffAfter(int failures) {
  // The step reaches max_backoff long before 64 doublings.
  Backoff backoff(options_.initial_backoff, options_.max_backoff);
  absl::Duration wait = options_.initial_backoff;
  for (int i = 0; i < std::min(failures, 64); ++i) wait = backoff.Next(gen_);
  return wait;
}

absl::StatusOr<AlarmSender::Counts> AlarmSender::RunOnce() {
  absl::StatusOr<std::vector<OutboxAlarm>> due =
      outbox_.ClaimDue(clock_.Now(), options_.lease, options_.batch);
  if (!due.ok()) return due.status();
  Counts counts;
  for (size_t i = 0; i < due->size(); ++i) {
    const OutboxAlarm& a = (*due)[i];
    absl::Status posted = poster_.Post(a.payload, a.key);
    if (posted.ok()) {
      ++counts.sent;
      metrics_.alarms_sent.Increment();
      absl::Status marked = outbox_.MarkSent(a.id, clock_.Now());
      // Not marked (leadership lost): a later leader sends it again under the same key.
      if (!marked.ok()) return marked;
      continue;
    }
    ++counts.failed;
    metrics_.alarms_failed.Increment();
    const absl::Time next = clock_.Now() + BackoffAfter(a.attempts + 1);
    spdlog::warn("alarm {} ({}), attempt {}: {}; next attempt at {}", a.key, a.kind, a.attempts + 1,
                 posted.ToString(), absl::FormatTime(next));
    if (absl::Status s = outbox_.MarkFailed(a.id, std::string(posted.message()), next); !s.ok()) {
      return s;
    }
    std::vector<int64_t> rest;
    for (size_t j = i + 1; j < due->size(); ++j) rest.push_back((*due)[j].id);
    if (absl::Status s = outbox_.Postpone(rest, next); !s.ok()) return s;
    break;
  }
  return counts;
}

}  // namespace jobwheel::scheduler
