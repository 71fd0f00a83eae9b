#include "sdk/internal/result_reporter.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "sdk/internal/dispatcher_client.h"
#include "sdk/internal/executor_metrics.h"
#include "sdk/internal/result_spool.h"

namespace jobwheel::sdk {
namespace {

using ::jobwheel::testing::Eventually;
using ::jobwheel::v1::RunResult;
using ::testing::UnorderedElementsAre;

constexpr absl::Duration kWait = absl::Seconds(10);

// Fails the first `failures` calls with UNAVAILABLE, then acknowledges everything except the
// run ids in `never_ack` (not answered) and `refuse` (refused for good).
class FakeDispatcherClient : public DispatcherClient {
 public:
  explicit FakeDispatcherClient(int failures = 0) : failures_(failures) {}

  absl::StatusOr<ReportAnswer> ReportResults(const std::vector<RunResult>& results) override {
    absl::MutexLock lock(&mu_);
    ++calls_;
    max_batch_ = std::max(max_batch_, results.size());
    if (down_ || failures_ > 0) {
      if (failures_ > 0) --failures_;
      return absl::UnavailableError("dispatcher down");
    }
    ReportAnswer answer;
    for (const auto& r : results) {
      received_.push_back(r.run_id());
      keys_[r.run_id()] = r.result_key();
      if (refuse_.count(r.run_id()) > 0) {
        answer.refused.push_back(r.run_id());
      } else if (never_ack_.count(r.run_id()) == 0) {
        answer.acked.push_back(r.run_id());
        delivered_.insert(r.run_id());
      }
    }
    return answer;
  }
  void Refuse(int64_t run_id) {
    absl::MutexLock lock(&mu_);
    refuse_.insert(run_id);
  }
  // The result key last received for `run_id`.
  std::string key(int64_t run_id) const {
    absl::MutexLock lock(&mu_);
    auto it = keys_.find(run_id);
    return it == keys_.end() ? "" : it->second;
  }
  void SetDown(bool down) {
    absl::MutexLock lock(&mu_);
    down_ = down;
  }
  void NeverAck(int64_t run_id) {
    absl::MutexLock lock(&mu_);
    never_ack_.insert(run_id);
  }
  std::set<int64_t> delivered() const {
    absl::MutexLock lock(&mu_);
    return delivered_;
  }
  int calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  size_t max_batch() const {
    absl::MutexLock lock(&mu_);
    return max_batch_;
  }
  int received(int64_t run_id) const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(std::count(received_.begin(), received_.end(), run_id));
  }

 private:
  mutable absl::Mutex mu_;
  int failures_;
  bool down_ = false;
  int calls_ = 0;
  size_t max_batch_ = 0;
  std::set<int64_t> never_ack_;
  std::set<int64_t> refuse_;
  std::map<int64_t, std::string> keys_;
  std::set<int64_t> delivered_;
  std::vector<int64_t> received_;
};

RunResult Result(int64_t run_id) {
  RunResult r;
  r.set_run_id(run_id);
  r.set_status(jobwheel::v1::RUN_STATUS_SUCCEEDED);
  r.set_code(200);
  r.set_message(absl::StrCat("run ", run_id));
  return r;
}

std::set<int64_t> SpooledIds(ResultSpool& spool) {
  std::set<int64_t> ids;
  auto all = spool.LoadAll();
  if (all.ok()) {
    for (const auto& r : *all) ids.insert(r.run_id());
  }
  return ids;
}

class ResultReporterTest : public ::testing::Test {
 protected:
  ResultReporterTest()
      : dir_(jobwheel::testing::TestTempDir(
                 ::testing::UnitTest::GetInstance()->current_test_info()->name()) +
             "/spool"),
        spool_(dir_),
        metrics_(registry_) {
    options_.initial_backoff = absl::Milliseconds(5);
    options_.max_backoff = absl::Milliseconds(20);
    options_.unacked_retry = absl::Milliseconds(20);
    options_.poll_interval = absl::Milliseconds(5);
  }
  void SetUp() override { ASSERT_TRUE(spool_.Init().ok()); }

  std::string dir_;
  ResultSpool spool_;
  prometheus::Registry registry_;
  ExecutorMetrics metrics_;
  ResultReporterOptions options_;
};

TEST_F(ResultReporterTest, SpoolsBeforeSendingAndRemovesAcked) {
  FakeDispatcherClient client;
  client.SetDown(true);
  ResultReporter reporter(&spool_, &client, RealClock::Get(), metrics_, options_);
  ASSERT_TRUE(reporter.Start().ok());
  reporter.Submit(Result(1));
  reporter.Submit(Result(2));
  // On disk at once, whatever the dispatcher does.
  EXPECT_EQ(SpooledIds(spool_), (std::set<int64_t>{1, 2}));
  ASSERT_TRUE(Eventually([&] { return client.calls() >= 3; }, kWait));
  EXPECT_EQ(reporter.pending(), 2u);
  EXPECT_EQ(metrics_.spool_size.Value(), 2);
  client.SetDown(false);
  ASSERT_TRUE(Eventually([&] { return reporter.pending() == 0; }, kWait));
  EXPECT_EQ(client.delivered(), (std::set<int64_t>{1, 2}));
  EXPECT_TRUE(SpooledIds(spool_).empty());
  EXPECT_EQ(metrics_.spool_size.Value(), 0);
}

TEST_F(ResultReporterTest, SurvivesRestartWhileTheDispatcherIsDown) {
  {
    FakeDispatcherClient down;
    down.SetDown(true);
    ResultReporter reporter(&spool_, &down, RealClock::Get(), metrics_, options_);
    ASSERT_TRUE(reporter.Start().ok());
    for (int64_t id = 1; id <= 5; ++id) reporter.Submit(Result(id));
    EXPECT_EQ(reporter.Flush(absl::Milliseconds(50)), 5u);
    reporter.Shutdown();
    EXPECT_TRUE(down.delivered().empty());
  }  // "Process exit".
  // Restart: the dispatcher fails a few more times, then works.
  FakeDispatcherClient flaky(/*failures=*/3);
  ResultReporter reporter(&spool_, &flaky, RealClock::Get(), metrics_, options_);
  ASSERT_TRUE(reporter.Start().ok());
  EXPECT_EQ(reporter.pending(), 5u);
  reporter.Submit(Result(6));
  ASSERT_TRUE(Eventually([&] { return reporter.pending() == 0; }, kWait));
  EXPECT_EQ(flaky.delivered(), (std::set<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(SpooledIds(spool_).empty());
  EXPECT_GE(flaky.calls(), 4);
}

TEST_F(ResultReporterTest, KeepsUnacknowledgedResults) {
  FakeDispatcherClient client;
  client.NeverAck(2);
  ResultReporter reporter(&spool_, &client, RealClock::Get(), metrics_, options_);
  ASSERT_TRUE(reporter.Start().ok());
  reporter.Submit(Result(1));
  reporter.Submit(Result(2));
  ASSERT_TRUE(Eventually([&] { return client.received(2) >= 3; }, kWait));  // Retried.
  EXPECT_EQ(client.delivered(), (std::set<int64_t>{1}));
  EXPECT_EQ(SpooledIds(spool_), (std::set<int64_t>{2}));
  EXPECT_EQ(reporter.pending(), 1u);
  EXPECT_EQ(client.received(1), 1);
}

TEST_F(ResultReporterTest, RefusedResultsAreDroppedFromTheSpoolAndCounted) {
  FakeDispatcherClient client;
  client.Refuse(2);
  ResultReporter reporter(&spool_, &client, RealClock::Get(), metrics_, options_);
  ASSERT_TRUE(reporter.Start().ok());
  reporter.Submit(Result(1));
  reporter.Submit(Result(2));
  ASSERT_TRUE(Eventually([&] { return reporter.pending() == 0; }, kWait));
  EXPECT_EQ(client.delivered(), (std::set<int64_t>{1}));
  EXPECT_EQ(client.received(2), 1);  // Not retried.
  EXPECT_TRUE(SpooledIds(spool_).empty());
  EXPECT_EQ(metrics_.results_refused.Value(), 1);
  EXPECT_EQ(metrics_.spool_size.Value(), 0);
}

// The result key rides with the result through the spool: a result replayed by a restarted
// executor still carries it.
TEST_F(ResultReporterTest, ReplayedResultsKeepTheirKey) {
  const std::string key(32, '\x5a');
  {
    FakeDispatcherClient down;
    down.SetDown(true);
    ResultReporter reporter(&spool_, &down, RealClock::Get(), metrics_, options_);
    ASSERT_TRUE(reporter.Start().ok());
    RunResult r = Result(7);
    r.set_result_key(key);
    reporter.Submit(r);
    reporter.Shutdown();
  }  // "Process exit".
  FakeDispatcherClient client;
  ResultSpool reopened(dir_);
  ASSERT_TRUE(reopened.Init().ok());
  ResultReporter reporter(&reopened, &client, RealClock::Get(), metrics_, options_);
  ASSERT_TRUE(reporter.Start().ok());
  ASSERT_TRUE(Eventually([&] { return reporter.pending() == 0; }, kWait));
  EXPECT_EQ(client.key(7), key);
}

TEST_F(ResultReporterTest, SendsBatchesOfAtMostMaxBatch) {
  options_.max_batch = 100;
  FakeDispatcherClient client;
  client.SetDown(true);
  ResultReporter reporter(&spool_, &client, RealClock::Get(), metrics_, options_);
  ASSERT_TRUE(reporter.Start().ok());
  for (int64_t id = 1; id <= 250; ++id) reporter.Submit(Result(id));
  client.SetDown(false);
  EXPECT_EQ(reporter.Flush(kWait), 0u);
  EXPECT_EQ(client.delivered().size(), 250u);
  EXPECT_EQ(client.max_batch(), 100u);
}

TEST_F(ResultReporterTest, WithoutADispatcherResultsStaySpooled) {
  ResultReporter reporter(&spool_, nullptr, RealClock::Get(), metrics_, options_);
  ASSERT_TRUE(reporter.Start().ok());
  reporter.Submit(Result(1));
  EXPECT_EQ(reporter.Flush(absl::Milliseconds(10)), 1u);
  EXPECT_EQ(SpooledIds(spool_), (std::set<int64_t>{1}));
}

TEST_F(ResultReporterTest, CorruptSpoolFilesAreSetAside) {
  ASSERT_TRUE(spool_.Put(Result(1)).ok());
  std::ofstream(dir_ + "/2.result") << "\xff\xff garbage";
  std::ofstream(dir_ + "/3.result.123.tmp") << "half written";
  ResultSpool reopened(dir_);
  ASSERT_TRUE(reopened.Init().ok());
  auto all = reopened.LoadAll();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].message(), "run 1");
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/2.result.bad"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/3.result.123.tmp"));
}

TEST_F(ResultReporterTest, BackoffFollowsTheClock) {
  FakeClock clock;
  FakeDispatcherClient client(/*failures=*/1);
  options_.initial_backoff = absl::Seconds(30);
  options_.max_backoff = absl::Seconds(60);
  ResultReporter reporter(&spool_, &client, clock, metrics_, options_);
  ASSERT_TRUE(reporter.Start().ok());
  reporter.Submit(Result(1));
  ASSERT_TRUE(Eventually([&] { return client.calls() == 1; }, kWait));
  clock.AwaitWaiters(1);             // The sender waits on the clock for its next attempt.
  clock.Advance(absl::Seconds(14));  // Within the jittered backoff (>= 15 s).
  clock.AwaitWaiters(1);
  EXPECT_EQ(client.calls(), 1);
  clock.Advance(absl::Seconds(17));  // Past it (<= 30 s).
  ASSERT_TRUE(Eventually([&] { return reporter.pending() == 0; }, kWait));
  EXPECT_EQ(client.calls(), 2);
}

}  // namespace
}  // namespace jobwheel::sdk
