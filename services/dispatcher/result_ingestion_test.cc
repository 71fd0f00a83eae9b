#include "services/dispatcher/result_ingestion.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/dispatcher/recording_store.h"

namespace jobwheel::dispatcher {
namespace {

using ::jobwheel::dispatcher::testing::RecordingStore;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

class ResultIngestionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OutcomeWriter::Options options;
    options.trigger_write_delay = absl::Milliseconds(250);
    writer_ = std::make_unique<OutcomeWriter>(store_, metrics_, clock_, options);
    writer_->Start();
    ingestion_ = std::make_unique<ResultIngestion>(store_, *writer_, metrics_, clock_, 16);
  }
  void TearDown() override { writer_->Shutdown(); }

  // A run the store knows (ids from 100 up).
  int64_t NewRun() {
    v1::Fire fire;
    fire.set_fire_id(++fire_id_);
    auto r = store_.DispatchFires({fire}, clock_.Now(), [](const v1::Fire&) {
      FirePlan plan;
      plan.runs.emplace_back();
      return plan;
    });
    return (*r)[0].run_ids[0];
  }
  // Each run's result with the key the store gave it.
  absl::StatusOr<v1::ReportResultsResponse> Report(const std::vector<int64_t>& runs,
                                                   const std::string& message = "ok") {
    v1::ReportResultsRequest req;
    for (int64_t id : runs) *req.add_results() = Result(id, message);
    return ingestion_->Report(req, std::nullopt);
  }
  v1::RunResult Result(int64_t run, const std::string& message = "ok",
                       v1::RunStatus status = v1::RUN_STATUS_SUCCEEDED) {
    v1::RunResult r;
    r.set_run_id(run);
    r.set_status(status);
    r.set_message(message);
    r.set_executor_address("10.0.0.1:9999");
    r.set_result_key(store_.key(run));
    return r;
  }
  absl::StatusOr<v1::ReportResultsResponse> ReportOne(const v1::RunResult& r) {
    v1::ReportResultsRequest req;
    *req.add_results() = r;
    return ingestion_->Report(req, std::nullopt);
  }
  void Started(int64_t run) {
    TriggerOutcome o;
    o.run_id = run;
    o.status = v1::RUN_STATUS_RUNNING;
    o.message_suffix = "; executor: STARTED";
    o.at = clock_.Now();
    writer_->Enqueue(o);
  }
  double Counter(const std::string& name, const std::map<std::string, std::string>& labels) {
    for (const auto& family : registry_.Collect()) {
      if (family.name != name) continue;
      for (const auto& m : family.metric) {
        std::map<std::string, std::string> got;
        for (const auto& l : m.label) got[l.name] = l.value;
        if (got == labels) return m.counter.value;
      }
    }
    return 0;
  }

  RecordingStore store_;
  SimulatedClock clock_;
  prometheus::Registry registry_;
  DispatcherMetrics metrics_{registry_};
  std::unique_ptr<OutcomeWriter> writer_;
  std::unique_ptr<ResultIngestion> ingestion_;
  int64_t fire_id_ = 0;
};

TEST_F(ResultIngestionTest, RecordsEachRunOnceAcksItAndRefusesUnknownRuns) {
  const int64_t run = NewRun();
  auto ack = Report({run, run, 999999});
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_THAT(std::vector<int64_t>(ack->acked_run_ids().begin(), ack->acked_run_ids().end()),
              ElementsAre(run));
  EXPECT_THAT(std::vector<int64_t>(ack->refused_run_ids().begin(), ack->refused_run_ids().end()),
              ElementsAre(999999));
  ASSERT_EQ(store_.result_writes().size(), 1u);
  EXPECT_THAT(store_.result_writes()[0].run_ids, ElementsAre(run, 999999));
  ASSERT_TRUE(Report({run}).ok());  // The executor's spool retried: a duplicate, acked.
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "recorded"}}), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "duplicate"}}), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "refused"}}), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_refused_total", {{"reason", "no_run"}}), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_refused_total", {{"reason", "bad_key"}}), 0);
}

TEST_F(ResultIngestionTest, ResultsWithoutTheRunsKeyAreRefusedAndChangeNothing) {
  const int64_t run = NewRun();
  ASSERT_EQ(store_.key(run).size(), 32u);
  Started(run);
  v1::RunResult forged = Result(run, "forged");
  forged.clear_result_key();
  auto ack = ReportOne(forged);
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_EQ(ack->acked_run_ids_size(), 0);
  EXPECT_THAT(std::vector<int64_t>(ack->refused_run_ids().begin(), ack->refused_run_ids().end()),
              ElementsAre(run));
  EXPECT_EQ(writer_->held(), 1u);  // The held answer was not written with it: held again.

  std::string wrong = store_.key(run);
  wrong[0] ^= 0x01;
  forged.set_result_key(wrong);
  ack = ReportOne(forged);
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_THAT(std::vector<int64_t>(ack->refused_run_ids().begin(), ack->refused_run_ids().end()),
              ElementsAre(run));
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_refused_total", {{"reason", "bad_key"}}), 2);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "recorded"}}), 0);

  // The run is still open: its executor's result (with the key) is recorded.
  ack = Report({run});
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_THAT(std::vector<int64_t>(ack->acked_run_ids().begin(), ack->acked_run_ids().end()),
              ElementsAre(run));
  EXPECT_EQ(ack->refused_run_ids_size(), 0);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "recorded"}}), 1);
}

TEST_F(ResultIngestionTest, ALateResultIsAckedKeptAsLateAndCounted) {
  const int64_t run = NewRun();
  store_.Finish(run, v1::RUN_STATUS_LOST);  // Its executor was declared offline.
  auto ack = Report({run});
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_THAT(std::vector<int64_t>(ack->acked_run_ids().begin(), ack->acked_run_ids().end()),
              ElementsAre(run));
  EXPECT_TRUE(store_.late(run));
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "late"}}), 1);
  // The same result again (a spool replay): a duplicate, still acked.
  ack = Report({run});
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_EQ(ack->acked_run_ids_size(), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "late"}}), 1);
  EXPECT_EQ(Counter("jobwheel_dispatcher_results_total", {{"outcome", "duplicate"}}), 1);
}

TEST_F(ResultIngestionTest, HeldAnswerRidesWithTheResultWrite) {
  const int64_t run = NewRun();
  Started(run);
  ASSERT_EQ(writer_->held(), 1u);
  ASSERT_TRUE(Report({run}).ok());
  ASSERT_EQ(store_.result_writes().size(), 1u);
  ASSERT_EQ(store_.result_writes()[0].answers.size(), 1u);
  EXPECT_EQ(store_.result_writes()[0].answers[0].run_id, run);
  EXPECT_EQ(writer_->pending(), 0u);
  EXPECT_EQ(Counter("jobwheel_dispatcher_trigger_answers_folded_total", {}), 1);
  writer_->Shutdown();
  EXPECT_FALSE(store_.TriggerWritten(run));  // Never written on its own.
}

TEST_F(ResultIngestionTest, AnswersOfUnwrittenResultsGoBackToTheWriter) {
  const int64_t run = NewRun();
  Started(run);
  store_.FailResults(true);
  EXPECT_EQ(Report({run}).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(writer_->held(), 1u);  // Held again.
  store_.FailResults(false);
  store_.Finish(run);  // E.g. the scheduler marked it LOST first: the result is a duplicate.
  ASSERT_TRUE(Report({run}).ok());
  EXPECT_EQ(store_.result_writes().back().answers.size(), 1u);  // Offered, not written...
  EXPECT_EQ(writer_->held(), 1u);                               // ...so held again.
  EXPECT_EQ(Counter("jobwheel_dispatcher_trigger_answers_folded_total", {}), 0);
  writer_->Shutdown();
  EXPECT_TRUE(store_.TriggerWritten(run));
}

}  // namespace
}  // namespace jobwheel::dispatcher
