// Alarms end to end within the scheduler: Monitors queue them in the outbox on their thread and
// an AlarmSender posts them on its own to a real local HTTP receiver that first refuses
// connections and later comes up. Both loops wait on one SimulatedClock.
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "prometheus/registry.h"
#include "services/scheduler/alarm_outbox_fake.h"
#include "services/scheduler/alarm_sender.h"
#include "services/scheduler/fake_fire_store.h"
#include "services/scheduler/fake_fire_store_rows.h"
#include "services/scheduler/monitors.h"
#include "services/scheduler/scheduler_metrics.h"
#include "services/scheduler/webhook_alarm.h"

namespace jobwheel::scheduler {
namespace {

// Counts the alarms it receives by Idempotency-Key.
class Receiver {
 public:
  explicit Receiver(int port = 0) {
    server_.Post("/alarm", [this](const httplib::Request& req, httplib::Response& res) {
      absl::MutexLock lock(&mu_);
      ++keys_[req.get_header_value("Idempotency-Key")];
      res.status = 204;
    });
    if (port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      port_ = server_.bind_to_port("127.0.0.1", port) ? port : -1;
    }
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // Bound and listening from here on: connections wait in the backlog until it accepts.
  }
  ~Receiver() {
    // stop() acts only on a running server.
    while (!server_.is_running()) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::map<std::string, int> keys() {
    absl::MutexLock lock(&mu_);
    return keys_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::map<std::string, int> keys_ ABSL_GUARDED_BY(mu_);
};

// Blocks every post until opened (a webhook that hangs).
class HangingPoster : public AlarmPoster {
 public:
  absl::Status Post(const std::string&, const std::string&) override {
    absl::MutexLock lock(&mu_);
    ++calls_;
    mu_.Await(absl::Condition(&open_));
    return absl::OkStatus();
  }
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  void AwaitCall() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* c) { return *c > 0; }, &calls_));
  }

 private:
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

class AlarmDeliveryTest : public ::testing::Test {
 protected:
  AlarmDeliveryTest() : store_(clock_), metrics_(registry_) {
    store_.SetLeader(true);
    store_.SetAlarmOutbox(&outbox_);
  }

  int64_t Job(int retries) {
    jobwheel::v1::Job job;
    job.set_app("demo");
    job.set_name("j");
    job.set_enabled(true);
    job.set_fail_retry_count(retries);
    return store_.AddJob(job);
  }
  int64_t ParentJob(int64_t child) {
    jobwheel::v1::Job job;
    job.set_app("demo");
    job.set_name("parent");
    job.set_enabled(true);
    job.add_child_job_ids(child);
    return store_.AddJob(job);
  }
  int64_t FailedRun(int64_t job) { return EndedRun(job, jobwheel::v1::RUN_STATUS_FAILED); }
  int64_t EndedRun(int64_t job, jobwheel::v1::RunStatus status) {
    return AddRunOf(store_, clock_.Now(), job, status);
  }
  size_t FiresOf(jobwheel::v1::TriggerType type) {
    size_t n = 0;
    for (const auto& f : store_.fires()) n += f.trigger_type == type;
    return n;
  }
  size_t RetryFires() { return FiresOf(jobwheel::v1::TRIGGER_TYPE_RETRY); }
  // Moves time by a second and waits until both loops are waiting again.
  void Tick() {
    clock_.Advance(absl::Seconds(1));
    clock_.AwaitWaiters(2);
  }

  SimulatedClock clock_;
  FakeFireStore store_;
  FakeAlarmOutbox outbox_;
  prometheus::Registry registry_;
  SchedulerMetrics metrics_;
};

TEST_F(AlarmDeliveryTest, AReceiverThatIsDownThenUpGetsEveryAlarmOncePerKey) {
  int port = 0;
  {
    Receiver probe;  // An ephemeral port that then refuses connections.
    port = probe.port();
  }
  auto webhook = WebhookAlarm::Create("http://127.0.0.1:" + std::to_string(port) + "/alarm", {});
  ASSERT_TRUE(webhook.ok());
  AlarmSender::Options sender_options;
  sender_options.initial_backoff = absl::Seconds(2);
  sender_options.max_backoff = absl::Seconds(4);
  AlarmSender sender(sender_options, outbox_, **webhook, clock_, metrics_);
  Monitors monitors(Monitors::Options(), store_, clock_, metrics_);
  monitors.Start();
  sender.Start();
  clock_.AwaitWaiters(2);

  // The receiver is down for 60 s. Meanwhile three runs fail for good (alarms), and each
  // ten seconds a run with retries left fails and a parent run succeeds: their retry and child
  // fires keep coming on the monitors' next pass, whatever the sender is doing.
  for (int i = 0; i < 3; ++i) FailedRun(Job(0));
  const int64_t child = Job(0);
  const int64_t parent = ParentJob(child);
  const int64_t retried = Job(100);
  for (int second = 1; second <= 60; ++second) {
    if (second % 10 == 0) {
      const size_t retries = RetryFires(), children = FiresOf(jobwheel::v1::TRIGGER_TYPE_PARENT);
      FailedRun(retried);
      EndedRun(parent, jobwheel::v1::RUN_STATUS_SUCCEEDED);
      Tick();
      EXPECT_EQ(RetryFires(), retries + 1) << "second " << second;
      EXPECT_EQ(FiresOf(jobwheel::v1::TRIGGER_TYPE_PARENT), children + 1) << "second " << second;
    } else {
      Tick();
    }
  }
  auto rows = outbox_.rows();
  ASSERT_EQ(rows.size(), 3u);
  // One alarm probes the receiver each backoff window (the others wait behind it, not
  // counted as attempts): tried again and again over the minute, nothing sent.
  int attempts = 0;
  for (const auto& r : rows) {
    attempts += r.attempts;
    EXPECT_FALSE(r.sent_at.has_value()) << r.event.key;
  }
  EXPECT_GE(attempts, 60 / 4);  // At least once per max_backoff (4 s).
  EXPECT_EQ(RetryFires(), 6u);

  // The receiver comes up on the same port; within the (capped) backoff everything arrives.
  Receiver receiver(port);
  ASSERT_EQ(receiver.port(), port);
  for (int i = 0; i < 10 && receiver.keys().size() < 3; ++i) Tick();
  // More passes and attempts: nothing arrives twice.
  for (int i = 0; i < 5; ++i) Tick();
  sender.Shutdown();
  monitors.Shutdown();
  const auto keys = receiver.keys();
  ASSERT_EQ(keys.size(), 3u);
  for (const auto& [key, n] : keys) EXPECT_EQ(n, 1) << key;
  for (const auto& r : outbox_.rows()) {
    EXPECT_TRUE(r.sent_at.has_value()) << r.event.key;
    EXPECT_EQ(keys.count(r.event.key), 1u) << r.event.key;
  }
}

TEST_F(AlarmDeliveryTest, AHangingWebhookNeverHoldsUpTheMonitors) {
  HangingPoster poster;
  AlarmSender sender(AlarmSender::Options(), outbox_, poster, clock_, metrics_);
  Monitors monitors(Monitors::Options(), store_, clock_, metrics_);
  FailedRun(Job(0));
  ASSERT_TRUE(monitors.RunOnce().ok());
  sender.Start();
  clock_.AwaitWaiters(1);
  clock_.Advance(absl::Seconds(1));
  poster.AwaitCall();  // The sender is stuck in its post.
  // The monitor pass still runs to the end: retries and new alarms.
  FailedRun(Job(0));
  FailedRun(Job(1));
  auto counts = monitors.RunOnce();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->retries, 1);
  EXPECT_EQ(counts->alarms, 1);
  poster.Open();
  sender.Shutdown();
}

}  // namespace
}  // namespace jobwheel::scheduler
