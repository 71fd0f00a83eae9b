// End to end: real PostgreSQL and the real binaries (registry, dispatcher, scheduler, demo
// executor) talking gRPC. A cron job created through JobAdminService/CreateJob fires every
// second on the demo executor and its runs are reported SUCCEEDED.
#include <signal.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/testing/pg_test_db.h"
#include "common/testing/process.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/leadership.grpc.pb.h"

namespace jobwheel {
namespace {

using testing::Eventually;
using testing::PickFreePort;
using testing::Process;
using testing::RunfilePath;

std::string Addr(int port) { return absl::StrCat("127.0.0.1:", port); }

class EndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    dir_ = testing::TestTempDir("e2e");
    for (const char* name : {"admin", "cluster", "executor"}) {
      std::ofstream(absl::StrCat(dir_, "/", name)) << "test-" << name << "-token\n";
    }
    registry_port_ = PickFreePort();
    dispatcher_port_ = PickFreePort();
    scheduler_port_ = PickFreePort();
    executor_port_ = PickFreePort();
    const std::string tok = dir_;
    ASSERT_TRUE(registry_
                    .Start(RunfilePath("services/registry/registry"),
                           {"--listen=" + Addr(registry_port_), "--db_dsn=" + dsn_,
                            "--metrics_address=", "--executor_token_file=" + tok + "/executor",
                            "--cluster_token_file=" + tok + "/cluster",
                            "--admin_token_file=" + tok + "/admin"},
                           dir_ + "/registry.log")
                    .ok());
    ASSERT_TRUE(testing::WaitForServing(Addr(registry_port_), absl::Seconds(20)).ok());
    ASSERT_TRUE(dispatcher_
                    .Start(RunfilePath("services/dispatcher/dispatcher"),
                           {"--listen=" + Addr(dispatcher_port_), "--db_dsn=" + dsn_,
                            "--metrics_address=", "--registry_target=" + Addr(registry_port_),
                            "--executor_token_file=" + tok + "/executor",
                            "--cluster_token_file=" + tok + "/cluster"},
                           dir_ + "/dispatcher.log")
                    .ok());
    ASSERT_TRUE(testing::WaitForServing(Addr(dispatcher_port_), absl::Seconds(20)).ok());
    ASSERT_TRUE(scheduler_
                    .Start(RunfilePath("services/scheduler/scheduler"),
                           {"--listen=" + Addr(scheduler_port_), "--db_dsn=" + dsn_,
                            "--metrics_address=", "--dispatcher_target=" + Addr(dispatcher_port_),
                            "--admin_token_file=" + tok + "/admin",
                            "--cluster_token_file=" + tok + "/cluster"},
                           dir_ + "/scheduler.log")
                    .ok());
    ASSERT_TRUE(testing::WaitForServing(Addr(scheduler_port_), absl::Seconds(20)).ok());
    ASSERT_TRUE(executor_
                    .Start(RunfilePath("sdk/examples/demo_executor"),
                           {"--listen=" + Addr(executor_port_), "--app=demo",
                            "--registry_target=" + Addr(registry_port_),
                            "--dispatcher_target=" + Addr(dispatcher_port_),
                            "--metrics_address=", "--log_dir=" + dir_ + "/exec-logs",
                            "--spool_dir=" + dir_ + "/exec-spool",
                            "--executor_token_file=" + tok + "/executor",
                            "--cluster_token_file=" + tok + "/cluster"},
                           dir_ + "/executor.log")
                    .ok());
    ASSERT_TRUE(testing::WaitForServing(Addr(executor_port_), absl::Seconds(20)).ok());
    auto channel = grpc::CreateChannel(Addr(scheduler_port_), grpc::InsecureChannelCredentials());
    admin_ = jobwheel::v1::JobAdminService::NewStub(channel);
    leadership_ = jobwheel::v1::LeadershipService::NewStub(channel);
  }

  void TearDown() override {
    for (Process* p : {&executor_, &scheduler_, &dispatcher_, &registry_}) {
      p->Signal(SIGTERM);
      if (!p->Wait(absl::Seconds(15)).ok()) p->Kill();
    }
    if (HasFailure()) {
      for (const char* name : {"registry", "dispatcher", "scheduler", "executor"}) {
        std::ifstream in(absl::StrCat(dir_, "/", name, ".log"));
        std::string line, tail;
        std::vector<std::string> lines;
        while (std::getline(in, line)) lines.push_back(line);
        for (size_t i = lines.size() > 30 ? lines.size() - 30 : 0; i < lines.size(); ++i) {
          tail += lines[i] + "\n";
        }
        std::cerr << "---- " << name << ".log (tail)\n" << tail;
      }
    }
  }

  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    ctx->AddMetadata("authorization", "Bearer test-admin-token");
    return ctx;
  }

  std::string dsn_, dir_;
  int registry_port_ = 0, dispatcher_port_ = 0, scheduler_port_ = 0, executor_port_ = 0;
  Process registry_, dispatcher_, scheduler_, executor_;
  std::unique_ptr<jobwheel::v1::JobAdminService::Stub> admin_;
  std::unique_ptr<jobwheel::v1::LeadershipService::Stub> leadership_;
};

TEST_F(EndToEndTest, CronJobRunsSucceedOnTheDemoExecutor) {
  // The scheduler becomes leader.
  ASSERT_TRUE(Eventually(
      [&] {
        jobwheel::v1::GetLeaderResponse r;
        return leadership_->GetLeader(Ctx().get(), {}, &r).ok() && r.is_leader();
      },
      absl::Seconds(10)));

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
    EXPECT_EQ(run.executor_address(), Addr(executor_port_));
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
}  // namespace jobwheel
