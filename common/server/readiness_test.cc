#include "common/server/readiness.h"

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace jobwheel {
namespace {

// Records what the readiness says to the health service.
class FakeHealth : public grpc::HealthCheckServiceInterface {
 public:
  void SetServingStatus(const std::string& service, bool serving) override {
    absl::MutexLock lock(&mu_);
    status_[service] = serving;
  }
  void SetServingStatus(bool serving) override {
    absl::MutexLock lock(&mu_);
    for (auto& [name, s] : status_) s = serving;
  }
  // "SERVING", "NOT_SERVING" or "UNKNOWN" (never set).
  std::string Of(const std::string& service) const {
    absl::MutexLock lock(&mu_);
    auto it = status_.find(service);
    if (it == status_.end()) return "UNKNOWN";
    return it->second ? "SERVING" : "NOT_SERVING";
  }
  // Blocks until `service` is `status` (the readiness thread applied a check's result).
  void Await(const std::string& service, const std::string& status) const {
    absl::MutexLock lock(&mu_);
    auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      auto it = status_.find(service);
      return it != status_.end() && (it->second ? "SERVING" : "NOT_SERVING") == status;
    };
    mu_.Await(absl::Condition(&reached));
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, bool> status_;
};

// A database check the test answers: each call blocks until the test sets its result.
class FakeCheck {
 public:
  absl::Status operator()() {
    absl::MutexLock lock(&mu_);
    ++calls_;
    auto answered = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return answers_ > 0; };
    mu_.Await(absl::Condition(&answered));
    --answers_;
    return next_;
  }
  // Lets one call return `s`.
  void Answer(absl::Status s) {
    absl::MutexLock lock(&mu_);
    next_ = std::move(s);
    ++answers_;
  }
  void AwaitCalls(int n) const {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_ >= n; };
    mu_.Await(absl::Condition(&enough));
  }
  int calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  mutable absl::Mutex mu_;
  int calls_ = 0;
  int answers_ = 0;
  absl::Status next_;
};

double GaugeValue(prometheus::Registry& registry, const std::string& name,
                  const std::string& condition) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      if (condition.empty() && m.label.empty()) return m.gauge.value;
      for (const auto& l : m.label) {
        if (l.name == "condition" && l.value == condition) return m.gauge.value;
      }
    }
  }
  return -1;
}

constexpr absl::Duration kInterval = absl::Seconds(5);
constexpr absl::Duration kTimeout = absl::Seconds(2);

TEST(ReadinessOptionsTest, ValidateNamesTheFlag) {
  ReadinessOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.db_check_interval = absl::ZeroDuration();
  EXPECT_NE(o.Validate().message().find("--db_check_interval"), std::string::npos);
  o = ReadinessOptions();
  o.db_check_timeout = -absl::Seconds(1);
  EXPECT_NE(o.Validate().message().find("--db_check_timeout"), std::string::npos);
  o = ReadinessOptions();
  o.drain_delay = -absl::Seconds(1);
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(o.Validate().message().find("--drain_delay"), std::string::npos);
}

TEST(ReadinessTest, ServingOnlyWhenEveryConditionIsReady) {
  SimulatedClock clock;
  FakeHealth health;
  Readiness readiness(clock);
  readiness.AddCondition(kDatabaseCondition);
  readiness.AddCondition(kRegistrySnapshotCondition);
  readiness.Attach(&health, {"jobwheel.v1.DispatcherService"});
  EXPECT_EQ(health.Of(""), "NOT_SERVING");
  EXPECT_EQ(health.Of("jobwheel.v1.DispatcherService"), "NOT_SERVING");
  EXPECT_EQ(health.Of(kLivenessService), "SERVING");

  readiness.Set(kDatabaseCondition, true);
  EXPECT_FALSE(readiness.ready());
  EXPECT_EQ(health.Of(""), "NOT_SERVING");
  EXPECT_EQ(readiness.ReadyStatus().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(readiness.ReadyStatus().message().find("registry_snapshot"), std::string::npos);

  readiness.Set(kRegistrySnapshotCondition, true);
  EXPECT_TRUE(readiness.ready());
  EXPECT_TRUE(readiness.ReadyStatus().ok());
  EXPECT_EQ(health.Of(""), "SERVING");
  EXPECT_EQ(health.Of("jobwheel.v1.DispatcherService"), "SERVING");

  readiness.Set(kDatabaseCondition, false, "connection refused");
  EXPECT_EQ(health.Of(""), "NOT_SERVING");
  EXPECT_EQ(health.Of("jobwheel.v1.DispatcherService"), "NOT_SERVING");
  EXPECT_EQ(health.Of(kLivenessService), "SERVING");
  EXPECT_NE(readiness.ReadyStatus().message().find("connection refused"), std::string::npos);
}

// A readiness whose database was reported ready before it was attached to `health` as "a.B".
class AttachedReadinessTest : public ::testing::Test {
 protected:
  AttachedReadinessTest() {
    readiness.Set(kDatabaseCondition, true);
    readiness.Attach(&health, {"a.B"});
  }
  SimulatedClock clock;
  FakeHealth health;
  Readiness readiness{clock};
};

TEST_F(AttachedReadinessTest, AttachPublishesTheStateReachedBefore) {
  EXPECT_EQ(health.Of(""), "SERVING");
  EXPECT_EQ(health.Of("a.B"), "SERVING");
}

TEST_F(AttachedReadinessTest, DrainingIsNotServingForGood) {
  ASSERT_EQ(health.Of(""), "SERVING");

  readiness.Drain("signal 15");
  EXPECT_TRUE(readiness.draining());
  EXPECT_EQ(health.Of(""), "NOT_SERVING");
  EXPECT_EQ(health.Of("a.B"), "NOT_SERVING");
  EXPECT_EQ(health.Of(kLivenessService), "SERVING");
  EXPECT_NE(readiness.ReadyStatus().message().find("draining"), std::string::npos);

  readiness.Set(kDatabaseCondition, false, "x");
  readiness.Set(kDatabaseCondition, true);
  EXPECT_FALSE(readiness.ready());
  EXPECT_EQ(health.Of(""), "NOT_SERVING");
}

TEST(ReadinessTest, NoConditionsIsReadyUntilDrained) {
  SimulatedClock clock;
  Readiness readiness(clock);
  EXPECT_TRUE(readiness.ready());
  readiness.Drain("signal 15");
  EXPECT_FALSE(readiness.ready());
}

TEST(ReadinessTest, PeriodicCheckFollowsTheDatabase) {
  SimulatedClock clock;
  FakeHealth health;
  prometheus::Registry metrics;
  FakeCheck check;
  Readiness readiness(clock, &metrics, "jobwheel_test");
  readiness.AddPeriodicCheck(
      kDatabaseCondition, [&check] { return check(); }, kInterval, kTimeout);
  readiness.Attach(&health, {"a.B"});
  EXPECT_EQ(health.Of(""), "NOT_SERVING");  // Not checked yet.
  EXPECT_EQ(GaugeValue(metrics, "jobwheel_test_ready", "database"), 0);
  readiness.Start();

  // First check at once: OK.
  check.AwaitCalls(1);
  check.Answer(absl::OkStatus());
  health.Await("", "SERVING");
  EXPECT_EQ(health.Of("a.B"), "SERVING");
  EXPECT_EQ(GaugeValue(metrics, "jobwheel_test_ready", "database"), 1);
  EXPECT_EQ(GaugeValue(metrics, "jobwheel_test_serving", ""), 1);

  // No second check before the interval has passed.
  clock.AwaitWaiters(1);
  clock.Advance(kInterval - absl::Milliseconds(1));
  clock.AwaitWaiters(1);
  EXPECT_EQ(check.calls(), 1);

  // The next check fails.
  clock.Advance(absl::Milliseconds(1));
  check.AwaitCalls(2);
  check.Answer(absl::UnavailableError("connection refused"));
  health.Await("", "NOT_SERVING");
  EXPECT_EQ(health.Of("a.B"), "NOT_SERVING");
  EXPECT_EQ(GaugeValue(metrics, "jobwheel_test_ready", "database"), 0);
  EXPECT_EQ(GaugeValue(metrics, "jobwheel_test_serving", ""), 0);
  EXPECT_NE(readiness.ReadyStatus().message().find("connection refused"), std::string::npos);

  // And recovers with the next.
  clock.AwaitWaiters(1);
  clock.Advance(kInterval);
  check.AwaitCalls(3);
  check.Answer(absl::OkStatus());
  health.Await("", "SERVING");
  EXPECT_EQ(check.calls(), 3);
  readiness.Shutdown();
}

TEST(ReadinessTest, CheckWithoutAnswerInTimeIsNotReadyAndNotStartedTwice) {
  SimulatedClock clock;
  FakeHealth health;
  FakeCheck check;
  Readiness readiness(clock);
  readiness.AddPeriodicCheck(
      kDatabaseCondition, [&check] { return check(); }, kInterval, kTimeout);
  readiness.Attach(&health, {});
  readiness.Start();
  check.AwaitCalls(1);
  check.Answer(absl::OkStatus());
  health.Await("", "SERVING");

  // The second check hangs: after the timeout the database is not ready.
  clock.AwaitWaiters(1);
  clock.Advance(kInterval);
  check.AwaitCalls(2);
  clock.AwaitWaiters(1);  // The loop awaits the answer until the timeout.
  EXPECT_EQ(health.Of(""), "SERVING");
  clock.Advance(kTimeout);
  clock.AwaitWaiters(1);  // Then waits out the interval.
  EXPECT_EQ(health.Of(""), "NOT_SERVING");
  EXPECT_NE(readiness.ReadyStatus().message().find("did not answer within 2s"), std::string::npos)
      << readiness.ReadyStatus();

  // The hung check is not started again while it runs.
  clock.Advance(kInterval);
  clock.AwaitWaiters(1);
  EXPECT_EQ(check.calls(), 2);

  // Once it answers in time, ready again.
  check.Answer(absl::OkStatus());
  health.Await("", "SERVING");
  EXPECT_EQ(check.calls(), 2);
  clock.AwaitWaiters(1);
  clock.Advance(kInterval);
  check.AwaitCalls(3);
  check.Answer(absl::OkStatus());
  readiness.Shutdown();
}

TEST(ReadinessTest, ShutdownWithoutStartAndTwice) {
  SimulatedClock clock;
  Readiness readiness(clock);
  readiness.AddPeriodicCheck(
      kDatabaseCondition, [] { return absl::OkStatus(); }, kInterval, kTimeout);
  readiness.Shutdown();
  readiness.Start();  // After Shutdown: nothing starts.
  readiness.Shutdown();
  EXPECT_FALSE(readiness.ready());
}

}  // namespace
}  // namespace jobwheel
