#include "services/scheduler/admin/job_admin_service.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/auth/in_memory_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/client_context.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "services/scheduler/admin/fake_executor_client.h"
#include "services/scheduler/admin/in_memory_job_store.h"

namespace jobwheel::scheduler::admin {
namespace {

constexpr char kToken[] = "admin-secret";

TokenAuthenticator::Options AdminToken() {
  TokenAuthenticator::Options o;
  o.admin_token = kToken;
  o.executor_token = "executor-secret";
  return o;
}

TokenAuthenticator::Options Insecure() {
  TokenAuthenticator::Options o;
  o.insecure_dev = true;
  return o;
}

// A real server on port 0 with a real channel; the stores are in memory.
class JobAdminServiceTest : public ::testing::Test {
 protected:
  void Start(TokenAuthenticator::Options options) {
    auth_ = std::make_unique<TokenAuthenticator>(options, &tokens_, clock_);
    service_ = std::make_unique<JobAdminService>(admin_, *auth_);
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
    return ::jobwheel::testing::Ctx(token);
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

  // An API token's secret.
  std::string Token(const std::string& name, Role role, std::vector<std::string> apps) {
    const std::string secret = *GenerateTokenSecret();
    NewToken t;
    t.name = name;
    t.role = role;
    t.apps = std::move(apps);
    t.secret_hash = HashTokenSecret(secret);
    t.create_time = clock_.Now();
    EXPECT_TRUE(tokens_.Create(t).ok());
    return secret;
  }

  absl::StatusOr<jobwheel::v1::Job> Create(const std::string& token, jobwheel::v1::Job job) {
    jobwheel::v1::CreateJobRequest req;
    *req.mutable_job() = std::move(job);
    jobwheel::v1::CreateJobResponse resp;
    grpc::Status s = stub_->CreateJob(Ctx(token).get(), req, &resp);
    if (!s.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
    }
    return resp.job();
  }

  static jobwheel::v1::Job ScriptJob(const std::string& app) {
    jobwheel::v1::Job job = ValidJob();
    job.set_app(app);
    job.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL);
    job.set_script_source("echo hi");
    job.clear_handler();
    return job;
  }

  FakeClock clock_;
  InMemoryTokenStore tokens_;
  std::unique_ptr<TokenAuthenticator> auth_;
  InMemoryJobStore store_{clock_};
  FakeExecutorClient executors_;
  JobAdmin admin_{store_, executors_, clock_};
  std::unique_ptr<JobAdminService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<jobwheel::v1::JobAdminService::Stub> stub_;
};

TEST_F(JobAdminServiceTest, RejectsCallsWithoutTheAdminToken) {
  Start(AdminToken());
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
  Start(AdminToken());
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
  Start(AdminToken());
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
  Start(AdminToken());
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
  Start(Insecure());
  jobwheel::v1::PreviewFireTimesRequest req;
  req.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(5);
  req.set_count(3);
  jobwheel::v1::PreviewFireTimesResponse resp;
  grpc::Status s = stub_->PreviewFireTimes(Ctx("").get(), req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.fire_times_size(), 3);
}

TEST_F(JobAdminServiceTest, OperatorManagesOnlyItsAppsJobs) {
  Start(AdminToken());
  const std::string op = Token("ops-demo", Role::kOperator, {"demo"});
  jobwheel::v1::Job other = ValidJob();
  other.set_app("other");
  auto other_job = Create(kToken, other);
  ASSERT_TRUE(other_job.ok()) << other_job.status();

  auto mine = Create(op, ValidJob());
  ASSERT_TRUE(mine.ok()) << mine.status();
  auto denied = Create(op, other);
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.status().message().find("job.app"), std::string::npos) << denied.status();

  // Write RPCs on the other app's job are refused as for a missing id and change nothing.
  jobwheel::v1::PauseJobRequest pause;
  pause.set_id(other_job->id());
  jobwheel::v1::PauseJobResponse paused;
  EXPECT_EQ(stub_->PauseJob(Ctx(op).get(), pause, &paused).error_code(),
            grpc::StatusCode::NOT_FOUND);
  jobwheel::v1::TriggerJobRequest trigger;
  trigger.set_id(other_job->id());
  jobwheel::v1::TriggerJobResponse fired;
  EXPECT_EQ(stub_->TriggerJob(Ctx(op).get(), trigger, &fired).error_code(),
            grpc::StatusCode::NOT_FOUND);
  jobwheel::v1::DeleteJobRequest del;
  del.set_id(other_job->id());
  jobwheel::v1::DeleteJobResponse deleted;
  EXPECT_EQ(stub_->DeleteJob(Ctx(op).get(), del, &deleted).error_code(),
            grpc::StatusCode::NOT_FOUND);
  jobwheel::v1::UpdateJobRequest update;
  update.mutable_job()->set_id(other_job->id());
  update.mutable_job()->set_param("x");
  update.mutable_update_mask()->add_paths("param");
  jobwheel::v1::UpdateJobResponse updated;
  EXPECT_EQ(stub_->UpdateJob(Ctx(op).get(), update, &updated).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // Moving its own job into another app is refused too.
  update.mutable_job()->set_id(mine->id());
  update.mutable_job()->set_app("other");
  update.mutable_update_mask()->add_paths("app");
  grpc::Status s = stub_->UpdateJob(Ctx(op).get(), update, &updated);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("job.app"), std::string::npos) << s.error_message();
  jobwheel::v1::GetJobRequest get;
  get.set_id(other_job->id());
  jobwheel::v1::GetJobResponse got;
  ASSERT_TRUE(stub_->GetJob(Ctx().get(), get, &got).ok());
  EXPECT_TRUE(got.job().enabled());
  EXPECT_EQ(got.job().param(), "");
  EXPECT_EQ(stub_->GetJob(Ctx(op).get(), get, &got).error_code(), grpc::StatusCode::NOT_FOUND);

  // Its own job: pause, trigger, update work.
  pause.set_id(mine->id());
  EXPECT_TRUE(stub_->PauseJob(Ctx(op).get(), pause, &paused).ok());
  trigger.set_id(mine->id());
  EXPECT_TRUE(stub_->TriggerJob(Ctx(op).get(), trigger, &fired).ok());

  // Lists are confined to its apps; asking for another app is refused.
  jobwheel::v1::ListJobsRequest list;
  jobwheel::v1::ListJobsResponse listed;
  ASSERT_TRUE(stub_->ListJobs(Ctx(op).get(), list, &listed).ok());
  ASSERT_EQ(listed.jobs_size(), 1);
  EXPECT_EQ(listed.jobs(0).id(), mine->id());
  list.set_app("other");
  EXPECT_EQ(stub_->ListJobs(Ctx(op).get(), list, &listed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  jobwheel::v1::ListRunsRequest runs;
  runs.set_app("other");
  jobwheel::v1::ListRunsResponse runs_resp;
  EXPECT_EQ(stub_->ListRuns(Ctx(op).get(), runs, &runs_resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // The admin sees both.
  list.clear_app();
  ASSERT_TRUE(stub_->ListJobs(Ctx().get(), list, &listed).ok());
  EXPECT_EQ(listed.jobs_size(), 2);
}

TEST_F(JobAdminServiceTest, ViewerOnlyReads) {
  Start(AdminToken());
  const std::string viewer = Token("viewer", Role::kViewer, {"*"});
  auto job = Create(kToken, ValidJob());
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(Create(viewer, ValidJob()).status().code(), absl::StatusCode::kPermissionDenied);
  jobwheel::v1::TriggerJobRequest trigger;
  trigger.set_id(job->id());
  jobwheel::v1::TriggerJobResponse fired;
  EXPECT_EQ(stub_->TriggerJob(Ctx(viewer).get(), trigger, &fired).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  jobwheel::v1::GetJobRequest get;
  get.set_id(job->id());
  jobwheel::v1::GetJobResponse got;
  EXPECT_TRUE(stub_->GetJob(Ctx(viewer).get(), get, &got).ok());
  jobwheel::v1::ListJobsRequest list;
  jobwheel::v1::ListJobsResponse listed;
  ASSERT_TRUE(stub_->ListJobs(Ctx(viewer).get(), list, &listed).ok());
  EXPECT_EQ(listed.jobs_size(), 1);
  jobwheel::v1::PreviewFireTimesRequest preview;
  preview.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(5);
  jobwheel::v1::PreviewFireTimesResponse previewed;
  EXPECT_TRUE(stub_->PreviewFireTimes(Ctx(viewer).get(), preview, &previewed).ok());
}

TEST_F(JobAdminServiceTest, ScriptJobsNeedAnAdmin) {
  Start(AdminToken());
  const std::string op = Token("ops-demo", Role::kOperator, {"demo"});
  auto denied = Create(op, ScriptJob("demo"));
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.status().message().rfind("job.glue_type:", 0), 0u) << denied.status();
  auto created = Create(kToken, ScriptJob("demo"));
  ASSERT_TRUE(created.ok()) << created.status();

  // Editing a script job, or turning a handler job into one, needs an admin too.
  jobwheel::v1::UpdateJobRequest update;
  update.mutable_job()->set_id(created->id());
  update.mutable_job()->set_script_source("rm -rf /");
  update.mutable_update_mask()->add_paths("script_source");
  jobwheel::v1::UpdateJobResponse updated;
  grpc::Status s = stub_->UpdateJob(Ctx(op).get(), update, &updated);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message().rfind("job.glue_type:", 0), 0u) << s.error_message();
  auto handler_job = Create(op, ValidJob());
  ASSERT_TRUE(handler_job.ok());
  update.mutable_job()->set_id(handler_job->id());
  update.mutable_job()->set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON);
  update.mutable_update_mask()->add_paths("glue_type");
  EXPECT_EQ(stub_->UpdateJob(Ctx(op).get(), update, &updated).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  jobwheel::v1::GetJobRequest get;
  get.set_id(created->id());
  jobwheel::v1::GetJobResponse got;
  ASSERT_TRUE(stub_->GetJob(Ctx().get(), get, &got).ok());
  EXPECT_EQ(got.job().script_source(), "echo hi");
  // The operator may still trigger it (running is not editing).
  jobwheel::v1::TriggerJobRequest trigger;
  trigger.set_id(created->id());
  jobwheel::v1::TriggerJobResponse fired;
  EXPECT_TRUE(stub_->TriggerJob(Ctx(op).get(), trigger, &fired).ok());
}

TEST_F(JobAdminServiceTest, InternalTokensAreNotAdminCredentials) {
  Start(AdminToken());
  const std::string exec = Token("exec-demo", Role::kExecutor, {"demo"});
  for (const std::string& token :
       {std::string("cluster-secret"), std::string("executor-secret"), exec}) {
    jobwheel::v1::ListJobsRequest list;
    jobwheel::v1::ListJobsResponse listed;
    EXPECT_EQ(stub_->ListJobs(Ctx(token).get(), list, &listed).error_code(),
              grpc::StatusCode::UNAUTHENTICATED)
        << token;
  }
}

// The dashboard RPCs: each caller sees only the apps it may read, naming another app is
// PERMISSION_DENIED, executor tokens are refused, bad input names its field.
TEST_F(JobAdminServiceTest, DashboardStatsAndCountsAreScoped) {
  Start(AdminToken());
  jobwheel::v1::Job a = ValidJob();
  a.set_app("alpha");
  jobwheel::v1::Job b = ValidJob();
  b.set_app("beta");
  ASSERT_TRUE(Create(kToken, a).ok());
  ASSERT_TRUE(Create(kToken, b).ok());
  for (const std::string& app : {"alpha", "alpha", "beta"}) {
    jobwheel::v1::Run run;
    run.set_job_id(app == "alpha" ? 1 : 2);
    run.set_app(app);
    run.set_status(jobwheel::v1::RUN_STATUS_FAILED);
    run.set_trigger_type(jobwheel::v1::TRIGGER_TYPE_CRON);
    *run.mutable_trigger_time() = ToProto(clock_.Now() - absl::Minutes(5));
    *run.mutable_scheduled_time() = ToProto(clock_.Now() - absl::Minutes(5));
    store_.AddRun(run);
  }
  const std::string viewer_alpha = Token("viewer-alpha", Role::kViewer, {"alpha"});
  const std::string op_beta = Token("ops-beta", Role::kOperator, {"beta"});
  const std::string viewer_all = Token("viewer-all", Role::kViewer, {"*"});
  const std::string exec_alpha = Token("exec-alpha", Role::kExecutor, {"alpha"});

  auto stats = [&](const std::string& token, const std::string& app, grpc::Status* status) {
    jobwheel::v1::GetRunStatsRequest req;
    req.set_app(app);
    jobwheel::v1::GetRunStatsResponse resp;
    *status = stub_->GetRunStats(Ctx(token).get(), req, &resp);
    return resp;
  };
  auto apps = [&](const std::string& token, const std::string& app, grpc::Status* status) {
    jobwheel::v1::CountJobsRequest req;
    req.set_app(app);
    jobwheel::v1::CountJobsResponse resp;
    *status = stub_->CountJobs(Ctx(token).get(), req, &resp);
    std::vector<std::string> out;
    for (const auto& c : resp.apps()) out.push_back(absl::StrCat(c.app(), ":", c.job_count()));
    return out;
  };
  using V = std::vector<std::string>;
  grpc::Status s;
  jobwheel::v1::GetRunStatsResponse r = stats(kToken, "", &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(r.total(), 3);
  EXPECT_EQ(r.buckets_size(), 25);
  EXPECT_EQ(stats(viewer_all, "", &s).total(), 3);
  EXPECT_EQ(stats(viewer_alpha, "", &s).total(), 2);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(stats(op_beta, "", &s).total(), 1);
  EXPECT_EQ(stats(viewer_alpha, "alpha", &s).total(), 2);
  r = stats(viewer_alpha, "beta", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(r.buckets_size(), 0);
  EXPECT_EQ(apps(kToken, "", &s), (V{"alpha:1", "beta:1"}));
  EXPECT_EQ(apps(viewer_alpha, "", &s), (V{"alpha:1"}));
  EXPECT_EQ(apps(op_beta, "", &s), (V{"beta:1"}));
  EXPECT_TRUE(apps(op_beta, "alpha", &s).empty());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  for (const std::string& token :
       {exec_alpha, std::string("executor-secret"), std::string("cluster-secret"), std::string()}) {
    stats(token, "", &s);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
    apps(token, "", &s);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
  }

  jobwheel::v1::GetRunStatsRequest bad;
  bad.mutable_bucket()->set_seconds(30);
  jobwheel::v1::GetRunStatsResponse resp;
  s = stub_->GetRunStats(Ctx(viewer_alpha).get(), bad, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("bucket: must be at least 1m", 0), 0u) << s.error_message();
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
