// End to end: a job with failRetryCount 1 whose handler fails on attempt 0 runs again on the
// executor as attempt 1 (a RETRY fire started by the leader's follow-up monitor) and succeeds.
// Executions are counted on the executor itself (the demo executor's --executions_file).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "gtest/gtest.h"
#include "tests/e2e/stack_test.h"

namespace jobwheel::e2e {
namespace {

using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::Execution;
using ::jobwheel::testing::Starts;

class RetryTest : public StackTest {};

TEST_F(RetryTest, FailedAttemptRetriesOnTheExecutorAndSucceedsAsAttemptOne) {
  // `flaky` with param 1 fails on attempt 0 and succeeds from attempt 1.
  jobwheel::v1::Job job = NewJob("flaky-once", "flaky", "1");
  job.set_fail_retry_count(1);
  auto created = CreateJob(job);
  ASSERT_TRUE(created.ok()) << created.status();
  const int64_t job_id = created->id();
  auto fire = TriggerJob(job_id);
  ASSERT_TRUE(fire.ok()) << fire.status();

  auto succeeded = AwaitRun(
      job_id,
      [](const jobwheel::v1::Run& r) { return r.status() == jobwheel::v1::RUN_STATUS_SUCCEEDED; },
      absl::Seconds(30));
  ASSERT_TRUE(succeeded.ok()) << succeeded.status();
  // Once the succeeded run's follow-up is done nothing more can fire for this job (it has no
  // children and no retries left), so the counts below are final.
  ASSERT_TRUE(Eventually(
      [&] {
        return QueryInt(absl::StrCat("SELECT count(*) FROM runs WHERE job_id = ", job_id,
                                     " AND NOT followup_done")) == 0;
      },
      absl::Seconds(20)));

  const std::vector<jobwheel::v1::Run> runs = Runs(job_id);
  ASSERT_EQ(runs.size(), 2u);
  const jobwheel::v1::Run& first = runs[0];
  const jobwheel::v1::Run& retry = runs[1];
  EXPECT_EQ(first.fire_id(), *fire);
  EXPECT_EQ(first.trigger_type(), jobwheel::v1::TRIGGER_TYPE_MANUAL);
  EXPECT_EQ(first.attempt(), 0);
  EXPECT_EQ(first.status(), jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_EQ(first.result_code(), 500);
  EXPECT_EQ(first.executor_address(), stack_->executor());
  EXPECT_NE(retry.fire_id(), first.fire_id());
  EXPECT_EQ(retry.trigger_type(), jobwheel::v1::TRIGGER_TYPE_RETRY);
  EXPECT_EQ(retry.attempt(), 1);
  EXPECT_EQ(retry.status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(retry.result_message(), "succeeded at attempt 1");
  EXPECT_EQ(retry.executor_address(), stack_->executor());
  // The retry fire names the failed run it follows up.
  EXPECT_EQ(QueryInt(absl::StrCat("SELECT parent_run_id FROM fires WHERE id = ", retry.fire_id())),
            first.id());
  EXPECT_EQ(QueryInt(absl::StrCat("SELECT count(*) FROM fires WHERE job_id = ", job_id)), 2);

  // On the executor: the handler ran exactly twice for this trigger, once per attempt, each
  // as the run the scheduler recorded, and ended as recorded.
  const std::vector<Execution> executions = stack_->Executions();
  const std::vector<Execution> starts = Starts(executions, job_id);
  std::vector<std::string> seen;
  for (const Execution& e : starts) {
    seen.push_back(absl::StrCat("run ", e.run_id, " attempt ", e.attempt));
  }
  ASSERT_EQ(starts.size(), 2u) << absl::StrJoin(seen, "; ");
  EXPECT_EQ(starts[0].run_id, first.id());
  EXPECT_EQ(starts[0].fire_id, first.fire_id());
  EXPECT_EQ(starts[0].attempt, 0);
  EXPECT_EQ(starts[1].run_id, retry.id());
  EXPECT_EQ(starts[1].fire_id, retry.fire_id());
  EXPECT_EQ(starts[1].attempt, 1);
  const std::vector<Execution> ends = ::jobwheel::testing::Ends(executions, job_id);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_FALSE(ends[0].ok);
  EXPECT_TRUE(ends[1].ok);
}

}  // namespace
}  // namespace jobwheel::e2e
