// AlarmSender on a FakeAlarmOutbox with a fake poster, driven by a SimulatedClock: delivery
// once per key, retries with backoff, the batch postponed after a failure, leadership.
#include "services/scheduler/alarm_sender.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/scheduler/alarm_outbox_fake.h"

namespace jobwheel::scheduler {
namespace {

// Accepts posts while up; counts every post by key. Can block posts until released.
class FakePoster : public AlarmPoster {
 public:
  absl::Status Post(const std::string& body, const std::string& key) override {
    absl::MutexLock lock(&mu_);
    ++calls_;
    mu_.Await(absl::Condition(
        +[](bool* open) { return *open; }, &open_));
    if (!up_) return absl::UnavailableError("connection refused");
    ++delivered_[key];
    bodies_.push_back(body);
    return absl::OkStatus();
  }
  void SetUp(bool up) {
    absl::MutexLock lock(&mu_);
    up_ = up;
  }
  void SetOpen(bool open) {
    absl::MutexLock lock(&mu_);
    open_ = open;
  }
  void AwaitCalls(int n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_ >= n; };
    mu_.Await(absl::Condition(&enough));
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  std::map<std::string, int> delivered() {
    absl::MutexLock lock(&mu_);
    return delivered_;
  }

 private:
  absl::Mutex mu_;
  bool up_ ABSL_GUARDED_BY(mu_) = true;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> delivered_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> bodies_ ABSL_GUARDED_BY(mu_);
};

class AlarmSenderTest : public ::testing::Test {
 protected:
  AlarmSenderTest() : metrics_(registry_) {
    options_.interval = absl::Seconds(1);
    options_.initial_backoff = absl::Seconds(10);
    options_.max_backoff = absl::Seconds(80);
    sender_ = std::make_unique<AlarmSender>(options_, outbox_, poster_, clock_, metrics_);
  }

  void Queue(int n) {
    for (int i = 0; i < n; ++i) {
      AlarmEvent e;
      e.kind = AlarmKind::kRunFailed;
      e.run_id = ++queued_;
      e.job_id = 1;
      e.key = absl::StrCat("run_failed/", e.run_id);
      ASSERT_TRUE(outbox_.Queue(e, clock_.Now()));
    }
  }

  double Counter(const std::string& outcome) {
    for (const auto& family : registry_.Collect()) {
      if (family.name != "jobwheel_scheduler_alarms_total") continue;
      for (const auto& m : family.metric) {
        for (const auto& l : m.label) {
          if (l.name == "outcome" && l.value == outcome) return m.counter.value;
        }
      }
    }
    return -1;
  }

  SimulatedClock clock_;
  FakeAlarmOutbox outbox_;
  FakePoster poster_;
  prometheus::Registry registry_;
  SchedulerMetrics metrics_;
  AlarmSender::Options options_;
  std::unique_ptr<AlarmSender> sender_;
  int64_t queued_ = 0;
};

TEST_F(AlarmSenderTest, SendsEachAlarmOnceWithItsKey) {
  Queue(3);
  auto counts = sender_->RunOnce();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->sent, 3);
  counts = sender_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->sent, 0);
  EXPECT_EQ(
      poster_.delivered(),
      (std::map<std::string, int>{{"run_failed/1", 1}, {"run_failed/2", 1}, {"run_failed/3", 1}}));
  for (const auto& row : outbox_.rows()) EXPECT_EQ(row.sent_at, clock_.Now());
  EXPECT_EQ(Counter("sent"), 3);
  EXPECT_EQ(Counter("failed"), 0);
}

TEST_F(AlarmSenderTest, AFailureBacksOffWithJitterAndPostponesTheBatch) {
  Queue(3);
  poster_.SetUp(false);
  auto counts = sender_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->failed, 1);
  EXPECT_EQ(poster_.calls(), 1);  // The rest of the batch was not tried.
  const absl::Time start = clock_.Now();
  auto rows = outbox_.rows();
  EXPECT_EQ(rows[0].attempts, 1);
  EXPECT_EQ(rows[0].last_error, "connection refused");
  // First backoff: uniform in [initial/2, initial].
  EXPECT_GE(rows[0].next_attempt, start + absl::Seconds(5));
  EXPECT_LE(rows[0].next_attempt, start + absl::Seconds(10));
  EXPECT_EQ(rows[1].next_attempt, rows[0].next_attempt);
  EXPECT_EQ(rows[1].attempts, 0);
  // Not due before then.
  clock_.Set(rows[0].next_attempt - absl::Milliseconds(1));
  counts = sender_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(poster_.calls(), 1);
  // Second failure: the step doubles, [10 s, 20 s].
  clock_.Set(rows[0].next_attempt);
  ASSERT_TRUE(sender_->RunOnce().ok());
  rows = outbox_.rows();
  EXPECT_EQ(rows[0].attempts, 2);
  EXPECT_GE(rows[0].next_attempt, clock_.Now() + absl::Seconds(10));
  EXPECT_LE(rows[0].next_attempt, clock_.Now() + absl::Seconds(20));
  // Capped at max_backoff after many failures.
  for (int i = 0; i < 6; ++i) {
    clock_.Set(outbox_.rows()[0].next_attempt);
    ASSERT_TRUE(sender_->RunOnce().ok());
  }
  rows = outbox_.rows();
  EXPECT_EQ(rows[0].attempts, 8);
  EXPECT_LE(rows[0].next_attempt, clock_.Now() + absl::Seconds(80));
  EXPECT_GE(rows[0].next_attempt, clock_.Now() + absl::Seconds(40));
  // Back up: every alarm goes out once.
  poster_.SetUp(true);
  clock_.Set(rows[0].next_attempt);
  counts = sender_->RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->sent, 3);
  EXPECT_EQ(poster_.delivered().size(), 3u);
  for (const auto& [key, n] : poster_.delivered()) EXPECT_EQ(n, 1) << key;
  EXPECT_EQ(Counter("failed"), 8);
  EXPECT_EQ(Counter("sent"), 3);
}

TEST_F(AlarmSenderTest, OnlyTheLeaderSends) {
  Queue(1);
  outbox_.SetLeader(false);
  EXPECT_EQ(sender_->RunOnce().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(poster_.calls(), 0);
}

TEST_F(AlarmSenderTest, TheLoopWaitsOnTheClockAndRetriesUntilDelivered) {
  Queue(2);
  poster_.SetUp(false);
  sender_->Start();
  clock_.AwaitWaiters(1);
  EXPECT_EQ(poster_.calls(), 0);  // Nothing before the first interval.
  clock_.Advance(options_.interval);
  poster_.AwaitCalls(1);
  clock_.AwaitWaiters(1);
  poster_.SetUp(true);
  // Within the first backoff (at most 10 s) plus an interval, both are delivered.
  for (int i = 0; i < 11 && poster_.delivered().size() < 2; ++i) {
    clock_.Advance(absl::Seconds(1));
    clock_.AwaitWaiters(1);
  }
  sender_->Shutdown();
  EXPECT_EQ(poster_.delivered(),
            (std::map<std::string, int>{{"run_failed/1", 1}, {"run_failed/2", 1}}));
}

}  // namespace
}  // namespace jobwheel::scheduler
