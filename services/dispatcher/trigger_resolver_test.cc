#include "services/dispatcher/trigger_resolver.h"

#include <map>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/dispatcher/fake_executor_clients.h"

namespace jobwheel::dispatcher {
namespace {

using ::testing::HasSubstr;

constexpr char kAddress[] = "127.0.0.1:7201";

TEST(TriggerAnswerUnknownTest, OnlyCallsThatMayHaveReachedTheExecutor) {
  EXPECT_TRUE(TriggerAnswerUnknown(absl::DeadlineExceededError("Deadline Exceeded")));
  EXPECT_TRUE(TriggerAnswerUnknown(absl::CancelledError("Cancelled")));
  EXPECT_TRUE(TriggerAnswerUnknown(absl::InternalError("stream cut")));
  EXPECT_TRUE(TriggerAnswerUnknown(absl::UnavailableError("Socket closed")));
  EXPECT_FALSE(TriggerAnswerUnknown(absl::UnavailableError(
      "failed to connect to all addresses; last error: UNKNOWN: Connection refused")));
  EXPECT_FALSE(TriggerAnswerUnknown(absl::UnavailableError("connection refused")));
  EXPECT_FALSE(TriggerAnswerUnknown(absl::UnimplementedError("no RunBatch")));
  EXPECT_FALSE(TriggerAnswerUnknown(absl::InvalidArgumentError("runs: too many")));
}

TEST(ResolvedOutcomeTest, EachPresence) {
  const absl::Status lost = absl::DeadlineExceededError("Deadline Exceeded");
  const absl::Time at = absl::FromUnixSeconds(100);
  v1::RunPresenceState s;
  s.set_run_id(7);
  s.set_presence(v1::RUN_PRESENCE_FENCED);
  auto o = ResolvedOutcome(s, lost, at);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->status, v1::RUN_STATUS_FAILED);
  EXPECT_THAT(o->message_suffix, HasSubstr("trigger error: DEADLINE_EXCEEDED"));
  for (v1::RunPresence p :
       {v1::RUN_PRESENCE_QUEUED, v1::RUN_PRESENCE_RUNNING, v1::RUN_PRESENCE_ENDED}) {
    s.set_presence(p);
    o = ResolvedOutcome(s, lost, at);
    ASSERT_TRUE(o.has_value());
    EXPECT_EQ(o->status, v1::RUN_STATUS_RUNNING);
    EXPECT_EQ(o->run_id, 7);
    EXPECT_EQ(o->at, at);
  }
  s.set_presence(v1::RUN_PRESENCE_REFUSED);
  s.set_status(v1::RUN_STATUS_DISCARDED);
  s.set_message("busy");
  o = ResolvedOutcome(s, lost, at);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->status, v1::RUN_STATUS_DISCARDED);
  EXPECT_THAT(o->message_suffix, HasSubstr("REFUSED DISCARDED (busy)"));
  s.set_status(v1::RUN_STATUS_FAILED);
  EXPECT_EQ(ResolvedOutcome(s, lost, at)->status, v1::RUN_STATUS_FAILED);
  s.set_presence(v1::RUN_PRESENCE_NOT_SEEN);
  EXPECT_FALSE(ResolvedOutcome(s, lost, at).has_value());
}

class Collected {
 public:
  void Add(TriggerOutcome o) {
    absl::MutexLock lock(&mu_);
    outcomes_.push_back(std::move(o));
  }
  bool AwaitCount(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return outcomes_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
  std::vector<TriggerOutcome> outcomes() {
    absl::MutexLock lock(&mu_);
    return outcomes_;
  }

 private:
  absl::Mutex mu_;
  std::vector<TriggerOutcome> outcomes_ ABSL_GUARDED_BY(mu_);
};

// Counts what the resolver reports through Options::on_settled (the dispatcher's metric).
class Settled {
 public:
  TriggerResolver::Options Observe(TriggerResolver::Options o) {
    o.on_settled = [this](absl::string_view presence, size_t runs) {
      absl::MutexLock lock(&mu_);
      counts_[std::string(presence)] += runs;
    };
    return o;
  }
  std::map<std::string, size_t> counts() {
    absl::MutexLock lock(&mu_);
    return counts_;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, size_t> counts_ ABSL_GUARDED_BY(mu_);
};

TEST(TriggerResolverTest, FencesUnseenRunsAndKeepsTakenOnesRunning) {
  FakeExecutorClients executors;
  executors.SetLostAnswer(kAddress, absl::DeadlineExceededError("late"));
  v1::RunBatchRequest batch;
  batch.add_runs()->set_run_id(1);  // Reaches the executor; its answer is lost.
  executors.RunBatchAsync("app", kAddress, batch, absl::Seconds(1), [](auto) {});
  SimulatedClock clock;
  Collected got;
  Settled settled;
  TriggerResolver resolver(executors, clock, settled.Observe(TriggerResolver::Options()),
                           [&](TriggerOutcome o) { got.Add(std::move(o)); });
  resolver.Start();
  resolver.Resolve("app", kAddress, {1, 2}, absl::DeadlineExceededError("late"));
  ASSERT_TRUE(got.AwaitCount(2));
  std::vector<TriggerOutcome> outcomes = got.outcomes();
  EXPECT_EQ(outcomes[0].run_id, 1);
  EXPECT_EQ(outcomes[0].status, v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(outcomes[1].run_id, 2);
  EXPECT_EQ(outcomes[1].status, v1::RUN_STATUS_FAILED);
  resolver.Shutdown();
  EXPECT_EQ(executors.get_runs_calls(), 1u);
  EXPECT_EQ(settled.counts(), (std::map<std::string, size_t>{{"fenced", 1}, {"running", 1}}));
}

TEST(TriggerResolverTest, RetriesWithBackoffThenLeavesTheRunsUnknown) {
  FakeExecutorClients executors;
  executors.SetGetRunsError(kAddress, absl::UnavailableError("Socket closed"));
  SimulatedClock clock;
  Collected got;
  TriggerResolver::Options options;
  options.attempts = 3;
  Settled settled;
  options = settled.Observe(options);
  TriggerResolver resolver(executors, clock, options,
                           [&](TriggerOutcome o) { got.Add(std::move(o)); });
  resolver.Start();
  resolver.Resolve("app", kAddress, {5}, absl::DeadlineExceededError("late"));
  for (size_t calls = 1; calls < 3; ++calls) {
    // A worker waits on the clock for the backoff before the next attempt.
    clock.AwaitWaiters(1);
    EXPECT_EQ(executors.get_runs_calls(), calls);
    EXPECT_TRUE(got.outcomes().empty());
    clock.Advance(options.backoff_max);
  }
  ASSERT_TRUE(got.AwaitCount(1));
  EXPECT_EQ(executors.get_runs_calls(), 3u);
  const TriggerOutcome o = got.outcomes()[0];
  EXPECT_EQ(o.status, v1::RUN_STATUS_RUNNING);
  EXPECT_THAT(o.message_suffix, HasSubstr("trigger answer unknown: DEADLINE_EXCEEDED: late"));
  EXPECT_THAT(o.message_suffix, HasSubstr("GetRuns failed 3 time(s)"));
  resolver.Shutdown();
  EXPECT_EQ(settled.counts(), (std::map<std::string, size_t>{{"unknown", 1}}));
}

TEST(TriggerResolverTest, ShutdownAnswersWhatIsLeft) {
  FakeExecutorClients executors;
  SimulatedClock clock;
  Collected got;
  TriggerResolver resolver(executors, clock, TriggerResolver::Options(),
                           [&](TriggerOutcome o) { got.Add(std::move(o)); });
  // Never started: Shutdown answers them unknown.
  resolver.Resolve("app", kAddress, {8, 9}, absl::DeadlineExceededError("late"));
  resolver.Shutdown();
  ASSERT_TRUE(got.AwaitCount(2));
  EXPECT_THAT(got.outcomes()[0].message_suffix, HasSubstr("trigger answer unknown"));
  resolver.Resolve("app", kAddress, {10}, absl::DeadlineExceededError("late"));
  ASSERT_TRUE(got.AwaitCount(3));
  EXPECT_EQ(executors.get_runs_calls(), 0u);
}

}  // namespace
}  // namespace jobwheel::dispatcher
