// End to end: an operator drains one of an app's two executors (AppAdminService/
// SetExecutorDraining). Every new run of a ROUND job goes to the other one from the next fire
// on, the run the drained executor had in hand finishes SUCCEEDED there, and undoing the drain
// makes it a target again. Counted on the executors (their executions files).
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "tests/e2e/stack_test.h"

namespace jobwheel::e2e {
namespace {

using ::jobwheel::FromProto;
using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::Execution;
using ::jobwheel::testing::Starts;
using testing::Ctx;

class DrainTest : public StackTest {
 protected:
  std::vector<Stack::ExecutorSpec> ExecutorSpecs() const override { return {{}, {}}; }

  grpc::Status SetDraining(const std::string& address, bool draining) {
    auto apps = jobwheel::v1::AppAdminService::NewStub(stack_->Channel(stack_->registry()));
    jobwheel::v1::SetExecutorDrainingRequest req;
    req.set_app("demo");
    req.set_address(address);
    req.set_draining(draining);
    req.set_reason("drain test");
    jobwheel::v1::SetExecutorDrainingResponse resp;
    return apps->SetExecutorDraining(Ctx(stack_->admin_token()).get(), req, &resp);
  }
};

TEST_F(DrainTest, ADrainedExecutorGetsNoNewRunsAndFinishesItsOwn) {
  const std::string drained = stack_->executor(1);
  // A long run in hand on the executor about to be drained.
  auto long_job = CreateJob(NewJob("long", "sleep", "3000"));
  ASSERT_TRUE(long_job.ok()) << long_job.status();
  jobwheel::v1::TriggerJobRequest trigger;
  trigger.set_id(long_job->id());
  trigger.set_executor_address(drained);
  jobwheel::v1::TriggerJobResponse triggered;
  grpc::Status s = admin_->TriggerJob(Ctx(stack_->admin_token()).get(), trigger, &triggered);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(Eventually([&] { return !Starts(stack_->Executions(1), long_job->id()).empty(); },
                         absl::Seconds(20)));

  // A ROUND job every second over both.
  jobwheel::v1::Job round = NewJob("round", "echo", "x");
  round.set_routing_strategy(jobwheel::v1::ROUTING_STRATEGY_ROUND);
  round.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(1);
  auto job = CreateJob(round);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(Eventually(
      [&] {
        return !Starts(stack_->Executions(0), job->id()).empty() &&
               !Starts(stack_->Executions(1), job->id()).empty();
      },
      absl::Seconds(20)))
      << "ROUND never reached both executors";

  // Bad input is refused naming the field; nothing drained.
  auto apps = jobwheel::v1::AppAdminService::NewStub(stack_->Channel(stack_->registry()));
  jobwheel::v1::SetExecutorDrainingRequest bad;
  bad.set_app("demo");
  bad.set_address("LOCALHOST.:1");
  jobwheel::v1::SetExecutorDrainingResponse ignored;
  grpc::Status refused = apps->SetExecutorDraining(Ctx(stack_->admin_token()).get(), bad, &ignored);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("address"), std::string::npos) << refused.error_message();

  const size_t before = Starts(stack_->Executions(1), job->id()).size();
  const absl::Time drained_at = absl::Now();
  ASSERT_TRUE(SetDraining(drained, true).ok());
  // From one fire period after the drain on, every run of the job starts on executor 0 (a
  // fire already handed off when the drain landed may still go to executor 1).
  ASSERT_TRUE(Eventually(
      [&] {
        for (const auto& r : Runs(job->id())) {
          if (FromProto(r.scheduled_time()) >= drained_at + absl::Seconds(1)) return true;
        }
        return false;
      },
      absl::Seconds(10)));
  const size_t settled = Starts(stack_->Executions(1), job->id()).size();
  EXPECT_LE(settled, before + 1);
  const size_t on_other = Starts(stack_->Executions(0), job->id()).size();
  ASSERT_TRUE(
      Eventually([&] { return Starts(stack_->Executions(0), job->id()).size() >= on_other + 4; },
                 absl::Seconds(15)));
  EXPECT_EQ(Starts(stack_->Executions(1), job->id()).size(), settled)
      << "a new run reached the drained executor";

  // The run it had in hand finished there.
  auto long_run = AwaitRun(
      long_job->id(),
      [](const jobwheel::v1::Run& r) { return r.status() == jobwheel::v1::RUN_STATUS_SUCCEEDED; },
      absl::Seconds(20));
  ASSERT_TRUE(long_run.ok()) << long_run.status();
  EXPECT_EQ(long_run->executor_address(), drained);

  // Listed as drained, with the reason; undone, it gets runs again.
  auto listed = stack_->ExecutorInstance("demo", drained);
  EXPECT_TRUE(listed.ok()) << listed.status();
  ASSERT_TRUE(SetDraining(drained, false).ok());
  const size_t undrained = Starts(stack_->Executions(1), job->id()).size();
  EXPECT_TRUE(
      Eventually([&] { return Starts(stack_->Executions(1), job->id()).size() > undrained; },
                 absl::Seconds(15)))
      << "the executor got no run after the drain was undone";
}

}  // namespace
}  // namespace jobwheel::e2e
