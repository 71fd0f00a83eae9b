#include "services/scheduler/admin/job_admin_service.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/clock.h"
#include "common/grpc_server.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "services/scheduler/admin/fake_executor_client.h"
#include "services/scheduler/admin/in_memory_job_store.h"

namespace jobwheel::scheduler::admin {
namespace {

constexpr char kToken[] = "admin-secret";

// A real server on port 0 with a real channel; the store is in memory.
class JobAdminServiceTest : public ::testing::Test {
 protected:
  void Start(TokenPolicy policy) {
    service_ = std::make_unique<JobAdminService>(admin_, policy);
    int port = 0;
    auto server = StartGrpcServer("127.0.0.1:0", {service_.get()}, {}, &port);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    auto channel = MakeChannel(absl::StrCat("127.0.0.1:", port));
    ASSERT_TRUE(channel.ok());
    stub_ = jobwheel::v1::JobAdminService::NewStub(*channel);
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token = kToken) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    AddBearer(*ctx, token);
    return ctx;
  }

  static jobwheel::v1::Job ValidJob() {
    jobwheel::v1::Job job;
    job.set_app("demo");
    job.set_name("hello");
    job.set_handler("hello");
    job.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(30);
    job.set_enabled(true);
    return job;
  }

  FakeClock clock_;
  InMemoryJobStore store_{clock_};
  FakeExecutorClient executors_;
  JobAdmin admin_{store_, executors_, clock_};
  std::unique_ptr<JobAdminService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<jobwheel::v1::JobAdminService::Stub> stub_;
};

TEST_F(JobAdminServiceTest, RejectsCallsWithoutTheAdminToken) {
  Start(TokenPolicy{false, {kToken}});
  jobwheel::v1::CreateJobRequest req;
  *req.mutable_job() = ValidJob();
  jobwheel::v1::CreateJobResponse resp;
  grpc::Status s = stub_->CreateJob(Ctx("").get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  s = stub_->CreateJob(Ctx("wrong").get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  jobwheel::v1::PreviewFireTimesRequest preview;
  jobwheel::v1::PreviewFireTimesResponse preview_resp;
  s = stub_->PreviewFireTimes(Ctx("").get(), preview, &preview_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  jobwheel::v1::GetJobRequest get;
  get.set_id(1);
  jobwheel::v1::GetJobResponse get_resp;
  EXPECT_EQ(stub_->GetJob(Ctx("").get(), get, &get_resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // Nothing was written.
  EXPECT_EQ(stub_->GetJob(Ctx().get(), get, &get_resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(JobAdminServiceTest, InvalidArgumentNamesTheField) {
  Start(TokenPolicy{false, {kToken}});
  jobwheel::v1::CreateJobRequest req;
  *req.mutable_job() = ValidJob();
  req.mutable_job()->clear_app();
  jobwheel::v1::CreateJobResponse resp;
  grpc::Status s = stub_->CreateJob(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "job.app: must not be empty");

  jobwheel::v1::ListJobsRequest list;
  list.set_page_size(1000);
  jobwheel::v1::ListJobsResponse list_resp;
  s = stub_->ListJobs(Ctx().get(), list, &list_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "page_size: must be between 0 and 500, got 1000");
}

TEST_F(JobAdminServiceTest, CreateThenGetRoundTrip) {
  Start(TokenPolicy{false, {kToken}});
  jobwheel::v1::CreateJobRequest req;
  *req.mutable_job() = ValidJob();
  jobwheel::v1::CreateJobResponse created;
  grpc::Status s = stub_->CreateJob(Ctx().get(), req, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_GT(created.job().id(), 0);
  EXPECT_TRUE(created.job().has_next_fire_time());

  jobwheel::v1::GetJobRequest get;
  get.set_id(created.job().id());
  jobwheel::v1::GetJobResponse got;
  s = stub_->GetJob(Ctx().get(), get, &got);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(got.job().SerializeAsString(), created.job().SerializeAsString());

  jobwheel::v1::TriggerJobRequest trigger;
  trigger.set_id(created.job().id());
  jobwheel::v1::TriggerJobResponse fired;
  s = stub_->TriggerJob(Ctx().get(), trigger, &fired);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_GT(fired.fire_id(), 0);

  jobwheel::v1::DeleteJobRequest del;
  del.set_id(created.job().id());
  jobwheel::v1::DeleteJobResponse deleted;
  EXPECT_TRUE(stub_->DeleteJob(Ctx().get(), del, &deleted).ok());
  EXPECT_EQ(stub_->GetJob(Ctx().get(), get, &got).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(JobAdminServiceTest, ConcurrentCallsAllComplete) {
  Start(TokenPolicy{false, {kToken}});
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        jobwheel::v1::CreateJobRequest req;
        *req.mutable_job() = ValidJob();
        req.mutable_job()->set_name(absl::StrCat("job ", t, "-", i));
        jobwheel::v1::CreateJobResponse resp;
        if (stub_->CreateJob(Ctx().get(), req, &resp).ok()) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 80);
  jobwheel::v1::ListJobsRequest list;
  list.set_page_size(500);
  jobwheel::v1::ListJobsResponse resp;
  ASSERT_TRUE(stub_->ListJobs(Ctx().get(), list, &resp).ok());
  EXPECT_EQ(resp.jobs_size(), 80);
}

TEST_F(JobAdminServiceTest, InsecureDevAcceptsCallsWithoutToken) {
  Start(TokenPolicy{true, {}});
  jobwheel::v1::PreviewFireTimesRequest req;
  req.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(5);
  req.set_count(3);
  jobwheel::v1::PreviewFireTimesResponse resp;
  grpc::Status s = stub_->PreviewFireTimes(Ctx("").get(), req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.fire_times_size(), 3);
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
