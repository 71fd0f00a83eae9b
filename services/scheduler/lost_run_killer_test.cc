// LostRunKiller with a scripted Kill and a SimulatedClock: runs are told at once, unreachable
// executors are retried with a backoff a bounded number of times, an announcement of the
// executor makes it due at once, and an answer or a refusal settles a run.
#include "services/scheduler/lost_run_killer.h"

#include <deque>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace jobwheel::scheduler {
namespace {

class LostRunKillerTest : public ::testing::Test {
 protected:
  LostRunKillerTest()
      : metrics_(registry_),
        killer_(
            Options(),
            [this](const std::string&, const std::string& address,
                   const jobwheel::v1::KillRequest& req) { return Call(address, req); },
            clock_, metrics_) {}

  static LostRunKiller::Options Options() {
    LostRunKiller::Options o;
    o.max_attempts = 3;
    o.first_backoff = absl::Seconds(1);
    return o;
  }

  absl::StatusOr<jobwheel::v1::KillResponse> Call(const std::string& address,
                                                  const jobwheel::v1::KillRequest& req) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(address + " " + std::to_string(req.run_id()));
    if (answers_.empty()) return absl::UnavailableError("connection refused");
    auto a = answers_.front();
    answers_.pop_front();
    return a;
  }
  void Answer(absl::StatusOr<jobwheel::v1::KillResponse> a) {
    absl::MutexLock lock(&mu_);
    answers_.push_back(std::move(a));
  }
  std::vector<std::string> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  static jobwheel::v1::KillResponse Killed(bool killed) {
    jobwheel::v1::KillResponse r;
    r.set_killed(killed);
    return r;
  }
  static FireStore::LostRun Lost(int64_t id, const std::string& address) {
    FireStore::LostRun r;
    r.run_id = id;
    r.app = "demo";
    r.executor_address = address;
    return r;
  }
  double Counter(const std::string& outcome) {
    for (const auto& family : registry_.Collect()) {
      if (family.name != "jobwheel_scheduler_lost_run_kills_total") continue;
      for (const auto& m : family.metric) {
        for (const auto& l : m.label) {
          if (l.value == outcome) return m.counter.value;
        }
      }
    }
    return -1;
  }

  SimulatedClock clock_;
  prometheus::Registry registry_;
  SchedulerMetrics metrics_;
  absl::Mutex mu_;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::StatusOr<jobwheel::v1::KillResponse>> answers_ ABSL_GUARDED_BY(mu_);
  LostRunKiller killer_;
};

TEST_F(LostRunKillerTest, AnUnreachableExecutorIsRetriedWithABackoffThenGivenUp) {
  killer_.Add({Lost(7, "a:1")});
  EXPECT_EQ(killer_.RunDue(), 1);  // At once.
  EXPECT_EQ(killer_.next_due(), clock_.Now() + absl::Seconds(1));
  clock_.Advance(absl::Milliseconds(999));
  EXPECT_EQ(killer_.RunDue(), 0);
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(killer_.RunDue(), 1);
  EXPECT_EQ(killer_.next_due(), clock_.Now() + absl::Seconds(2));  // Doubled.
  clock_.Advance(absl::Seconds(2));
  EXPECT_EQ(killer_.RunDue(), 1);  // The third and last attempt.
  EXPECT_EQ(killer_.pending(), 0u);
  EXPECT_EQ(calls(), (std::vector<std::string>{"a:1 7", "a:1 7", "a:1 7"}));
  EXPECT_EQ(Counter("retried"), 2);
  EXPECT_EQ(Counter("gave_up"), 1);
}

TEST_F(LostRunKillerTest, AnExecutorComingBackIsToldAtOnceAndEachRunSettlesOnAnAnswer) {
  killer_.Add({Lost(1, "a:1"), Lost(2, "a:1"), Lost(3, "b:2")});
  EXPECT_EQ(killer_.RunDue(), 2);  // One call per executor: its first run finds it unreachable.
  EXPECT_EQ(killer_.pending(), 3u);
  killer_.OnExecutorChanged("demo", "a:1");  // Registered again.
  Answer(Killed(true));
  Answer(Killed(false));
  EXPECT_EQ(killer_.RunDue(), 2);  // Both runs of a:1; b:2 waits for its backoff.
  EXPECT_EQ(killer_.pending(), 1u);
  EXPECT_EQ(Counter("killed"), 1);
  EXPECT_EQ(Counter("not_running"), 1);
  Answer(absl::PermissionDeniedError("no"));  // Refused: given up, not retried.
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(killer_.RunDue(), 1);
  EXPECT_EQ(killer_.pending(), 0u);
  EXPECT_EQ(Counter("gave_up"), 1);
  EXPECT_EQ(calls(), (std::vector<std::string>{"a:1 1", "b:2 3", "a:1 1", "a:1 2", "b:2 3"}));
}

TEST_F(LostRunKillerTest, TheLoopTellsAddedRunsWithoutWaiting) {
  killer_.Start();
  clock_.AwaitWaiters(0);
  Answer(Killed(true));
  killer_.Add({Lost(5, "a:1")});
  const absl::Time deadline = RealClock::Get().Now() + absl::Seconds(10);
  while (killer_.pending() > 0 && RealClock::Get().Now() < deadline) {
    RealClock::Get().SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(killer_.pending(), 0u);
  EXPECT_EQ(calls(), (std::vector<std::string>{"a:1 5"}));
  killer_.Shutdown();
}

}  // namespace
}  // namespace jobwheel::scheduler
