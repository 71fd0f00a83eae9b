#include "services/dispatcher/outcome_writer.h"

#include <memory>
#include <thread>
#include <vector>

#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/dispatcher/dispatcher_metrics.h"
#include "services/dispatcher/recording_store.h"

namespace jobwheel::dispatcher {
namespace {

using ::jobwheel::dispatcher::testing::RecordingStore;
using ::jobwheel::testing::Eventually;

constexpr absl::Duration kDelay = absl::Milliseconds(250);
constexpr absl::Duration kWait = absl::Seconds(10);

class OutcomeWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OutcomeWriter::Options options;
    options.trigger_write_delay = kDelay;
    writer_ = std::make_unique<OutcomeWriter>(store_, metrics_, clock_, options);
    writer_->Start();
  }
  void TearDown() override { writer_->Shutdown(); }

  TriggerOutcome Answer(int64_t run_id, v1::RunStatus status) {
    TriggerOutcome o;
    o.run_id = run_id;
    o.status = status;
    o.message_suffix = "; executor: STARTED";
    o.at = clock_.Now();
    return o;
  }
  v1::RunResult Result(int64_t run_id) {
    v1::RunResult r;
    r.set_run_id(run_id);
    r.set_status(v1::RUN_STATUS_SUCCEEDED);
    return r;
  }

  RecordingStore store_;
  SimulatedClock clock_;
  prometheus::Registry registry_;
  DispatcherMetrics metrics_{registry_};
  std::unique_ptr<OutcomeWriter> writer_;
};

TEST_F(OutcomeWriterTest, FailuresAreWrittenAtOnceRunningAnswersWhenDue) {
  writer_->Enqueue(Answer(1, v1::RUN_STATUS_RUNNING));
  writer_->Enqueue(Answer(2, v1::RUN_STATUS_FAILED));
  writer_->Enqueue(Answer(3, v1::RUN_STATUS_DISCARDED));
  // The clock has not moved: only the answers that are not held can be written.
  ASSERT_TRUE(
      Eventually([&] { return store_.TriggerWritten(2) && store_.TriggerWritten(3); }, kWait));
  EXPECT_FALSE(store_.TriggerWritten(1));
  EXPECT_EQ(writer_->held(), 1u);
  EXPECT_EQ(writer_->pending(), 1u);
  clock_.AwaitWaiters(1);  // The writer waits for the held answer's time.
  clock_.Advance(kDelay - absl::Milliseconds(1));
  clock_.AwaitWaiters(1);
  EXPECT_FALSE(store_.TriggerWritten(1));
  clock_.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(Eventually([&] { return store_.TriggerWritten(1); }, kWait));
  EXPECT_TRUE(Eventually([&] { return writer_->pending() == 0; }, kWait));
}

TEST_F(OutcomeWriterTest, TakenAnswersAreNotWrittenAndPutBackOnesAre) {
  writer_->Enqueue(Answer(1, v1::RUN_STATUS_RUNNING));
  writer_->Enqueue(Answer(2, v1::RUN_STATUS_RUNNING));
  ASSERT_EQ(writer_->held(), 2u);
  std::vector<TriggerOutcome> taken = writer_->TakeHeld({Result(1), Result(2), Result(3)});
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(writer_->held(), 0u);
  EXPECT_EQ(writer_->pending(), 2u);  // Carried by a result write, not yet settled.
  // Run 1's result was recorded with its answer; run 2's was not: its answer comes back.
  std::vector<TriggerOutcome> put_back;
  for (TriggerOutcome& o : taken) {
    if (o.run_id == 2) put_back.push_back(o);
  }
  writer_->EndFold(taken.size(), std::move(put_back));
  EXPECT_EQ(writer_->held(), 1u);
  EXPECT_EQ(writer_->pending(), 1u);
  clock_.Advance(kDelay);
  ASSERT_TRUE(Eventually([&] { return store_.TriggerWritten(2); }, kWait));
  writer_->Shutdown();
  EXPECT_FALSE(store_.TriggerWritten(1));
}

TEST_F(OutcomeWriterTest, ASecondAnswerOfAHeldRunIsNotHeld) {
  writer_->Enqueue(Answer(1, v1::RUN_STATUS_RUNNING));
  writer_->Enqueue(Answer(1, v1::RUN_STATUS_RUNNING));
  EXPECT_EQ(writer_->held(), 1u);
  ASSERT_TRUE(Eventually([&] { return store_.trigger_writes().size() == 1; }, kWait));
}

TEST_F(OutcomeWriterTest, ShutdownWritesEveryHeldAnswer) {
  for (int64_t run = 1; run <= 5; ++run) writer_->Enqueue(Answer(run, v1::RUN_STATUS_RUNNING));
  EXPECT_EQ(writer_->held(), 5u);
  writer_->Shutdown();  // The clock never moved: none was due.
  for (int64_t run = 1; run <= 5; ++run) EXPECT_TRUE(store_.TriggerWritten(run)) << run;
  EXPECT_EQ(writer_->pending(), 0u);
}

TEST_F(OutcomeWriterTest, ShutdownWaitsForTakenAnswersToSettle) {
  writer_->Enqueue(Answer(1, v1::RUN_STATUS_RUNNING));
  std::vector<TriggerOutcome> taken = writer_->TakeHeld({Result(1)});
  ASSERT_EQ(taken.size(), 1u);
  std::thread stopper([&] { writer_->Shutdown(); });
  writer_->EndFold(1, std::move(taken));  // The result write failed: written on its own.
  stopper.join();
  EXPECT_TRUE(store_.TriggerWritten(1));
  EXPECT_EQ(writer_->pending(), 0u);
}

}  // namespace
}  // namespace jobwheel::dispatcher
