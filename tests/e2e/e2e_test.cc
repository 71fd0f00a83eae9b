// End to end: real PostgreSQL and the real binaries (registry, dispatcher, scheduler, demo
// executor) talking gRPC. A cron job created through JobAdminService/CreateJob fires every
// second on the demo executor and its runs are reported SUCCEEDED.
#include <set>

#include "absl/strings/str_cat.h"
#include "common/testing/process.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "tests/e2e/stack_test.h"

namespace jobwheel::e2e {
namespace {

using testing::Eventually;

class EndToEndTest : public StackTest {
 protected:
  std::unique_ptr<grpc::ClientContext> Ctx() { return testing::Ctx(stack_->admin_token()); }
};

TEST_F(EndToEndTest, CronJobRunsSucceedOnTheDemoExecutor) {
  // StackTest waited until the scheduler leads and the executor is online.
  jobwheel::v1::CreateJobRequest create;
  auto* job = create.mutable_job();
  job->set_app("demo");
  job->set_name("echo-every-second");
  job->set_handler("echo");
  job->set_param("hello");
  job->mutable_schedule()->mutable_cron()->set_expression("* * * * * ?");
  job->set_routing_strategy(jobwheel::v1::ROUTING_STRATEGY_FIRST);
  job->set_enabled(true);
  jobwheel::v1::CreateJobResponse created;
  grpc::Status s = admin_->CreateJob(Ctx().get(), create, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const int64_t job_id = created.job().id();

  // Several SUCCEEDED runs on the executor, each for its own scheduled second.
  jobwheel::v1::ListRunsResponse runs;
  ASSERT_TRUE(Eventually(
      [&] {
        jobwheel::v1::ListRunsRequest req;
        req.set_job_id(job_id);
        req.add_statuses(jobwheel::v1::RUN_STATUS_SUCCEEDED);
        runs.Clear();
        return admin_->ListRuns(Ctx().get(), req, &runs).ok() && runs.runs_size() >= 3;
      },
      absl::Seconds(20)))
      << "succeeded runs: " << runs.runs_size();
  std::set<int64_t> seconds;
  for (const auto& run : runs.runs()) {
    EXPECT_EQ(run.executor_address(), stack_->executor());
    EXPECT_EQ(run.trigger_type(), jobwheel::v1::TRIGGER_TYPE_CRON);
    EXPECT_EQ(run.scheduled_time().nanos(), 0);
    seconds.insert(run.scheduled_time().seconds());
  }
  EXPECT_EQ(seconds.size(), static_cast<size_t>(runs.runs_size()));

  // Bad input is refused with the field named; no token is refused.
  jobwheel::v1::CreateJobRequest bad = create;
  bad.mutable_job()->mutable_schedule()->mutable_cron()->set_expression("0 0 25 * * ?");
  s = admin_->CreateJob(Ctx().get(), bad, &created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("hour"), std::string::npos) << s.error_message();
  grpc::ClientContext anonymous;
  s = admin_->CreateJob(&anonymous, create, &created);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

}  // namespace
}  // namespace jobwheel::e2e
