// The XXL gateway through restarts: of the gateway itself in the middle of a run, and of the
// dispatcher while an XXL executor calls a result back.
#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "gtest/gtest.h"
#include "tests/xxl/xxl_stack_test.h"

namespace jobwheel::xxl_test {
namespace {

namespace v1 = jobwheel::v1;
using testing::Eventually;
using testing::Starts;

bool Ended(const v1::Run& r) {
  return r.status() != v1::RUN_STATUS_RUNNING && r.status() != v1::RUN_STATUS_PENDING;
}

bool NonEmptyFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

class XxlRestartTest : public XxlStackTest {
 protected:
  std::string Spool(int i) const {
    return absl::StrCat(stack_->dir(), "/xxl", i, "/spool/callbacks.jsonl");
  }
};

TEST_F(XxlRestartTest, DispatcherDownDuringACallbackTheResultIsRecordedOnceItIsBack) {
  StartXxl(0, token_);
  ASSERT_TRUE(AwaitOnline(0, absl::Seconds(20)).ok());
  auto job = CreateJob(XxlJob("sleep3", "sleep", "3000"));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(TriggerJob(job->id()).ok());
  auto running = AwaitRun(
      job->id(), [](const v1::Run& r) { return r.status() == v1::RUN_STATUS_RUNNING; },
      absl::Seconds(15));
  ASSERT_TRUE(running.ok()) << running.status();
  testing::Stack::StopProcess(stack_->dispatcher_process(0));
  // The handler ends and its callback is refused (code 500): the executor spools it.
  ASSERT_TRUE(Eventually([&] { return NonEmptyFile(Spool(0)); }, absl::Seconds(15)))
      << "the XXL executor's callback was acknowledged with no dispatcher up";
  auto still = GetRun(running->id());
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->status(), v1::RUN_STATUS_RUNNING);
  ASSERT_TRUE(stack_->StartDispatcher(0).ok());
  auto done = AwaitRun(job->id(), Ended, absl::Seconds(20));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->status(), v1::RUN_STATUS_SUCCEEDED) << done->result_message();
  // The executor's retry is acknowledged: its spool empties.
  EXPECT_TRUE(Eventually([&] { return !NonEmptyFile(Spool(0)); }, absl::Seconds(10)));
  EXPECT_EQ(Starts(XxlExecutions(0), job->id()).size(), 1u);
}

TEST_F(XxlRestartTest, GatewayRestartMidRunKeepsItsPortLogsAndCallbacks) {
  StartXxl(0, token_);
  auto address = AwaitOnline(0, absl::Seconds(20));
  ASSERT_TRUE(address.ok()) << address.status();
  auto job = CreateJob(XxlJob("sleep4", "stubborn", "4000"));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(TriggerJob(job->id()).ok());
  auto running = AwaitRun(
      job->id(), [](const v1::Run& r) { return r.status() == v1::RUN_STATUS_RUNNING; },
      absl::Seconds(15));
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_TRUE(
      Eventually([&] { return !Starts(XxlExecutions(0), job->id()).empty(); }, absl::Seconds(10)));

  StartGateway();  // SIGTERM, then the same flags, ports and state dir.
  auto again = AwaitOnline(0, absl::Seconds(20));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *address);  // The identity's port is kept across the restart.

  // The run ends (its executor went offline with the gateway for a moment, so jobwheel may
  // have declared it LOST); either way the executor's callback is acknowledged, never left to
  // be retried forever, and the run executed once.
  auto done = AwaitRun(job->id(), Ended, absl::Seconds(20));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->status() == v1::RUN_STATUS_SUCCEEDED || done->status() == v1::RUN_STATUS_LOST)
      << v1::RunStatus_Name(done->status()) << ": " << done->result_message();
  ASSERT_TRUE(Eventually([&] { return !testing::Ends(XxlExecutions(0), job->id()).empty(); },
                         absl::Seconds(10)));
  EXPECT_TRUE(Eventually([&] { return !NonEmptyFile(Spool(0)); }, absl::Seconds(10)));
  EXPECT_EQ(Starts(XxlExecutions(0), job->id()).size(), 1u);
  // Its log is still read through the restarted gateway (the run's logDateTime was kept).
  const std::vector<std::string> log = RunLog(running->id());
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return absl::StrContains(l, "start:");
  })) << absl::StrJoin(log, "\n");
}

}  // namespace
}  // namespace jobwheel::xxl_test
