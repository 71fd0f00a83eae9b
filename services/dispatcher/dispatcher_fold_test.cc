// The dispatcher's held trigger answers end to end: STARTED/QUEUED answers held by the
// OutcomeWriter and carried by the result writes of ResultIngestion, through Dispatcher.
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/dispatcher/dispatch_test_util.h"
#include "services/dispatcher/dispatcher.h"
#include "services/dispatcher/fake_executor_clients.h"
#include "services/dispatcher/recording_store.h"

namespace jobwheel::dispatcher {
namespace {

using ::jobwheel::dispatcher::testing::MakeFire;
using ::jobwheel::dispatcher::testing::MakeJob;
using ::jobwheel::dispatcher::testing::RecordingStore;
using ::jobwheel::testing::Eventually;

constexpr absl::Duration kWait = absl::Seconds(10);

double CounterValue(prometheus::Registry& registry, const std::string& name) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) return m.counter.value;
  }
  return 0;
}

// STARTED/QUEUED answers wait trigger_write_delay (on the FakeClock) for their run's result to
// carry them; failures are written at once.
class DispatcherFoldTest : public ::testing::Test {
 protected:
  static constexpr absl::Duration kDelay = absl::Milliseconds(250);

  void SetUp() override {
    v1::WatchExecutorsResponse snap;
    snap.set_version(1);
    snap.set_type(v1::WATCH_EVENT_TYPE_SNAPSHOT);
    v1::Executor* e = snap.add_executors();
    e->set_app("demo");
    e->set_address("127.0.0.1:7201");
    e->add_handlers("echo");
    directory_.Apply(snap);
    Dispatcher::Options options;
    options.trigger_write_delay = kDelay;
    dispatcher_ = std::make_unique<Dispatcher>(store_, directory_, router_, executors_, pools_,
                                               metrics_, clock_, options);
    dispatcher_->Start();
  }
  void TearDown() override { dispatcher_->Shutdown(); }

  // Dispatches one fire; the executor answers `answer`. Returns the run id.
  int64_t Trigger(v1::RunDisposition answer) {
    executors_.SetDisposition(answer);
    v1::DispatchRequest req;
    *req.add_fires() =
        MakeFire(++fire_id_, MakeJob(1, "demo", "echo", v1::ROUTING_STRATEGY_FIRST), clock_.Now());
    auto r = dispatcher_->Dispatch(req);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->outcomes_size() != 1 || r->outcomes(0).run_ids_size() != 1) return 0;
    return r->outcomes(0).run_ids(0);
  }

  absl::StatusOr<v1::ReportResultsResponse> Report(int64_t run_id) {
    v1::ReportResultsRequest req;
    v1::RunResult* res = req.add_results();
    res->set_run_id(run_id);
    res->set_status(v1::RUN_STATUS_SUCCEEDED);
    res->set_result_key(store_.key(run_id));
    return dispatcher_->ReportResults(req);
  }

  bool HeldEventually(size_t n) {
    return Eventually([&] { return dispatcher_->held_outcomes() == n; }, kWait);
  }

  // Waits until the writer has written a failure answer enqueued now, i.e. has looked at the
  // clock after everything done before this call.
  void WriterBarrier() {
    const int64_t run = Trigger(v1::RUN_DISPOSITION_REJECTED);
    ASSERT_TRUE(Eventually([&] { return store_.TriggerWritten(run); }, kWait));
  }

  double Folded() {
    return CounterValue(registry_, "jobwheel_dispatcher_trigger_answers_folded_total");
  }

  RecordingStore store_;
  FakeClock clock_;
  std::mt19937_64 gen_{1};
  FakeExecutorClients executors_;
  ExecutorDirectory directory_;
  prometheus::Registry registry_;
  DispatcherMetrics metrics_{registry_};
  Router router_{clock_, gen_, executors_};
  TriggerPools pools_{clock_, TriggerPools::Options()};
  int64_t fire_id_ = 0;
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(DispatcherFoldTest, HeldAnswerRidesWithTheResultWrite) {
  const int64_t run = Trigger(v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(HeldEventually(1));
  WriterBarrier();
  EXPECT_FALSE(store_.TriggerWritten(run));  // Not due: the FakeClock has not moved.

  auto ack = Report(run);
  ASSERT_TRUE(ack.ok()) << ack.status();
  ASSERT_EQ(ack->acked_run_ids_size(), 1);
  EXPECT_EQ(dispatcher_->held_outcomes(), 0u);
  EXPECT_EQ(dispatcher_->pending_outcomes(), 0u);
  std::vector<RecordingStore::ResultWrite> writes = store_.result_writes();
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_THAT(writes[0].run_ids, ::testing::ElementsAre(run));
  ASSERT_EQ(writes[0].answers.size(), 1u);
  EXPECT_EQ(writes[0].answers[0].run_id, run);
  EXPECT_EQ(writes[0].answers[0].status, v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(writes[0].answers[0].message_suffix, "; executor: STARTED");
  EXPECT_EQ(writes[0].answers[0].at, clock_.Now());
  EXPECT_EQ(Folded(), 1);

  clock_.Advance(absl::Hours(1));
  dispatcher_->Shutdown();
  EXPECT_FALSE(store_.TriggerWritten(run));  // Never written on its own.
}

TEST_F(DispatcherFoldTest, HeldAnswerIsWrittenWhenDueWithoutResult) {
  const int64_t run = Trigger(v1::RUN_DISPOSITION_QUEUED);
  ASSERT_TRUE(HeldEventually(1));
  clock_.Advance(kDelay - absl::Milliseconds(1));
  WriterBarrier();
  EXPECT_FALSE(store_.TriggerWritten(run));
  EXPECT_EQ(dispatcher_->held_outcomes(), 1u);

  clock_.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(Eventually([&] { return store_.TriggerWritten(run); }, kWait));
  for (const TriggerOutcome& o : store_.trigger_writes()) {
    if (o.run_id != run) continue;
    EXPECT_EQ(o.status, v1::RUN_STATUS_RUNNING);
    EXPECT_EQ(o.message_suffix, "; executor: QUEUED");
  }
  EXPECT_TRUE(Eventually([&] { return dispatcher_->pending_outcomes() == 0; }, kWait));
  // Its result comes later: nothing is left to carry.
  ASSERT_TRUE(Report(run).ok());
  EXPECT_TRUE(store_.result_writes().back().answers.empty());
  EXPECT_EQ(Folded(), 0);
}

TEST_F(DispatcherFoldTest, FailureAnswersAreWrittenAtOnce) {
  const int64_t rejected = Trigger(v1::RUN_DISPOSITION_REJECTED);
  const int64_t discarded = Trigger(v1::RUN_DISPOSITION_DISCARDED);
  executors_.SetDown("127.0.0.1:7201", true);
  const int64_t error = Trigger(v1::RUN_DISPOSITION_STARTED);
  // The FakeClock never moves: only answers that are not held can be written.
  EXPECT_TRUE(Eventually(
      [&] {
        return store_.TriggerWritten(rejected) && store_.TriggerWritten(discarded) &&
               store_.TriggerWritten(error);
      },
      kWait));
  EXPECT_EQ(dispatcher_->held_outcomes(), 0u);
}

TEST_F(DispatcherFoldTest, FailedResultWriteGivesTheAnswerBack) {
  const int64_t run = Trigger(v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(HeldEventually(1));
  store_.FailResults(true);
  EXPECT_EQ(Report(run).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_EQ(store_.result_writes().size(), 1u);
  EXPECT_EQ(store_.result_writes()[0].answers.size(), 1u);  // It was offered...
  EXPECT_EQ(dispatcher_->held_outcomes(), 1u);              // ...and is held again.
  EXPECT_EQ(dispatcher_->pending_outcomes(), 1u);

  store_.FailResults(false);  // The executor retries its report.
  ASSERT_TRUE(Report(run).ok());
  ASSERT_EQ(store_.result_writes().size(), 2u);
  ASSERT_EQ(store_.result_writes()[1].answers.size(), 1u);
  EXPECT_EQ(store_.result_writes()[1].answers[0].run_id, run);
  EXPECT_EQ(dispatcher_->pending_outcomes(), 0u);
  EXPECT_EQ(Folded(), 1);
  dispatcher_->Shutdown();
  EXPECT_FALSE(store_.TriggerWritten(run));
}

TEST_F(DispatcherFoldTest, AnswerOfAnUnrecordedResultIsWrittenOnItsOwn) {
  const int64_t run = Trigger(v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(HeldEventually(1));
  store_.Finish(run);  // E.g. the scheduler marked it LOST first: the result is a duplicate.
  ASSERT_TRUE(Report(run).ok());
  EXPECT_EQ(store_.result_writes()[0].answers.size(), 1u);
  EXPECT_EQ(dispatcher_->held_outcomes(), 1u);
  EXPECT_EQ(Folded(), 0);
  clock_.Advance(kDelay);
  EXPECT_TRUE(Eventually([&] { return store_.TriggerWritten(run); }, kWait));
}

TEST_F(DispatcherFoldTest, ShutdownWritesEveryHeldAnswer) {
  std::vector<int64_t> runs;
  for (int i = 0; i < 5; ++i) runs.push_back(Trigger(v1::RUN_DISPOSITION_STARTED));
  ASSERT_TRUE(HeldEventually(5));
  dispatcher_->Shutdown();  // The FakeClock never moved: none was due.
  for (int64_t run : runs) EXPECT_TRUE(store_.TriggerWritten(run)) << run;
  EXPECT_EQ(dispatcher_->pending_outcomes(), 0u);
}

// A result write carrying a held answer fails while the dispatcher shuts down: the writer
// waits for it and writes the answer it gives back.
TEST_F(DispatcherFoldTest, ShutdownWaitsForAnswersInAResultWrite) {
  const int64_t run = Trigger(v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(HeldEventually(1));
  absl::Notification gate;
  store_.HoldResultsAt(&gate);
  store_.FailResults(true);
  std::thread reporter([&] { EXPECT_FALSE(Report(run).ok()); });
  store_.entered().WaitForNotification();
  EXPECT_EQ(dispatcher_->held_outcomes(), 0u);  // Taken by the result write.
  std::thread stopper([&] { dispatcher_->Shutdown(); });
  gate.Notify();
  reporter.join();
  stopper.join();
  EXPECT_TRUE(store_.TriggerWritten(run));
  EXPECT_EQ(dispatcher_->pending_outcomes(), 0u);
}

}  // namespace
}  // namespace jobwheel::dispatcher
