// End to end: JobAdminService/KillRun stops a live run on its executor: the run of a `sleep`
// handler (60 s) is KILLED, and the executor's record shows the handler returned, cancelled,
// long before its sleep would have ended.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "gtest/gtest.h"
#include "tests/e2e/stack_test.h"

namespace jobwheel::e2e {
namespace {

using ::jobwheel::testing::Ends;
using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::Execution;
using ::jobwheel::testing::Starts;
using testing::Ctx;

class KillRunTest : public StackTest {};

TEST_F(KillRunTest, KillRunStopsTheHandlerAndTheRunIsKilled) {
  auto job = CreateJob(NewJob("long-sleep", "sleep", "60000"));
  ASSERT_TRUE(job.ok()) << job.status();
  const int64_t job_id = job->id();
  ASSERT_TRUE(TriggerJob(job_id).ok());

  // The run is live: RUNNING in the scheduler's view and its handler started on the executor.
  auto running = AwaitRun(
      job_id,
      [](const jobwheel::v1::Run& r) { return r.status() == jobwheel::v1::RUN_STATUS_RUNNING; },
      absl::Seconds(30));
  ASSERT_TRUE(running.ok()) << running.status();
  const int64_t run_id = running->id();
  ASSERT_TRUE(Eventually([&] { return !Starts(stack_->Executions(0), job_id).empty(); },
                         absl::Seconds(10)));
  EXPECT_TRUE(Ends(stack_->Executions(0), job_id).empty());

  jobwheel::v1::KillRunRequest kill;
  kill.set_id(run_id);
  jobwheel::v1::KillRunResponse killed;
  grpc::Status s = admin_->KillRun(Ctx(stack_->admin_token()).get(), kill, &killed);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(killed.run().id(), run_id);

  // KILLED, reported by the executor; well before the 60 s sleep could have ended.
  auto final_run = AwaitRun(
      job_id,
      [&](const jobwheel::v1::Run& r) {
        return r.id() == run_id && r.status() != jobwheel::v1::RUN_STATUS_RUNNING &&
               r.status() != jobwheel::v1::RUN_STATUS_PENDING;
      },
      absl::Seconds(15));
  ASSERT_TRUE(final_run.ok()) << final_run.status();
  EXPECT_EQ(final_run->status(), jobwheel::v1::RUN_STATUS_KILLED)
      << jobwheel::v1::RunStatus_Name(final_run->status()) << ": " << final_run->result_message();

  // The handler stopped on the executor: its execution ended, cancelled, exactly once.
  std::vector<Execution> ends;
  ASSERT_TRUE(Eventually(
      [&] {
        ends = Ends(stack_->Executions(0), job_id);
        return !ends.empty();
      },
      absl::Seconds(10)));
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].run_id, run_id);
  EXPECT_TRUE(ends[0].cancelled);
  EXPECT_FALSE(ends[0].ok);
  EXPECT_EQ(Starts(stack_->Executions(0), job_id).size(), 1u);
  const std::vector<std::string> log = RunLog(run_id);
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return absl::StrContains(l, "interrupted");
  })) << absl::StrJoin(log, "\n");

  // Killing it again is refused with the state named.
  jobwheel::v1::KillRunResponse again;
  s = admin_->KillRun(Ctx(stack_->admin_token()).get(), kill, &again);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "KILLED")) << s.error_message();
}

}  // namespace
}  // namespace jobwheel::e2e
