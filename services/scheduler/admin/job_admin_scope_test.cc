// App scope through JobAdminService (real server on port 0, stores in memory): ids of jobs and
// runs of apps the caller may not read answer exactly like missing ids, and child jobs may
// name only jobs of apps the writer may operate (a job of another app answers like a missing
// one), with the writer's scope stored for the fire-time check.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/auth/in_memory_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/client_context.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "services/scheduler/admin/fake_executor_client.h"
#include "services/scheduler/admin/in_memory_job_store.h"
#include "services/scheduler/admin/job_admin.h"
#include "services/scheduler/admin/job_admin_service.h"

namespace jobwheel::scheduler::admin {
namespace {

constexpr char kAdmin[] = "admin-secret";
using Scope = std::optional<std::vector<std::string>>;

class JobAdminScopeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TokenAuthenticator::Options o;
    o.admin_token = kAdmin;
    auth_ = std::make_unique<TokenAuthenticator>(o, &tokens_, clock_);
    service_ = std::make_unique<JobAdminService>(admin_, *auth_);
    int port = 0;
    auto server = StartGrpcServer("127.0.0.1:0", {service_.get()}, {}, &port);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    auto channel = MakeChannel(absl::StrCat("127.0.0.1:", port));
    ASSERT_TRUE(channel.ok());
    stub_ = jobwheel::v1::JobAdminService::NewStub(*channel);
    op_ = Token("ops-demo", Role::kOperator, {"demo"});
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

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

  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
    return ::jobwheel::testing::Ctx(token);
  }

  static jobwheel::v1::Job NewJob(const std::string& app, std::vector<int64_t> children = {}) {
    jobwheel::v1::Job job;
    job.set_app(app);
    job.set_name("j");
    job.set_handler("hello");
    job.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(30);
    for (int64_t c : children) job.add_child_job_ids(c);
    return job;
  }

  grpc::Status Create(const std::string& token, const jobwheel::v1::Job& job,
                      jobwheel::v1::Job* out = nullptr) {
    jobwheel::v1::CreateJobRequest req;
    *req.mutable_job() = job;
    jobwheel::v1::CreateJobResponse resp;
    grpc::Status s = stub_->CreateJob(Ctx(token).get(), req, &resp);
    if (out != nullptr) *out = resp.job();
    return s;
  }

  grpc::Status SetChildren(const std::string& token, int64_t id, std::vector<int64_t> children) {
    jobwheel::v1::UpdateJobRequest req;
    req.mutable_job()->set_id(id);
    for (int64_t c : children) req.mutable_job()->add_child_job_ids(c);
    req.mutable_update_mask()->add_paths("child_job_ids");
    jobwheel::v1::UpdateJobResponse resp;
    return stub_->UpdateJob(Ctx(token).get(), req, &resp);
  }

  // Every id-taking RPC with `id`, as `token`: the statuses, in a fixed order.
  std::vector<std::pair<int, std::string>> Probe(const std::string& token, int64_t id,
                                                 int64_t run_id) {
    std::vector<grpc::Status> out;
    {
      jobwheel::v1::GetJobRequest r;
      r.set_id(id);
      jobwheel::v1::GetJobResponse resp;
      out.push_back(stub_->GetJob(Ctx(token).get(), r, &resp));
    }
    {
      jobwheel::v1::UpdateJobRequest r;
      r.mutable_job()->set_id(id);
      r.mutable_job()->set_param("x");
      r.mutable_update_mask()->add_paths("param");
      jobwheel::v1::UpdateJobResponse resp;
      out.push_back(stub_->UpdateJob(Ctx(token).get(), r, &resp));
    }
    {
      jobwheel::v1::DeleteJobRequest r;
      r.set_id(id);
      jobwheel::v1::DeleteJobResponse resp;
      out.push_back(stub_->DeleteJob(Ctx(token).get(), r, &resp));
    }
    {
      jobwheel::v1::PauseJobRequest r;
      r.set_id(id);
      jobwheel::v1::PauseJobResponse resp;
      out.push_back(stub_->PauseJob(Ctx(token).get(), r, &resp));
    }
    {
      jobwheel::v1::ResumeJobRequest r;
      r.set_id(id);
      jobwheel::v1::ResumeJobResponse resp;
      out.push_back(stub_->ResumeJob(Ctx(token).get(), r, &resp));
    }
    {
      jobwheel::v1::TriggerJobRequest r;
      r.set_id(id);
      jobwheel::v1::TriggerJobResponse resp;
      out.push_back(stub_->TriggerJob(Ctx(token).get(), r, &resp));
    }
    {
      jobwheel::v1::GetRunRequest r;
      r.set_id(run_id);
      jobwheel::v1::GetRunResponse resp;
      out.push_back(stub_->GetRun(Ctx(token).get(), r, &resp));
    }
    {
      jobwheel::v1::KillRunRequest r;
      r.set_id(run_id);
      jobwheel::v1::KillRunResponse resp;
      out.push_back(stub_->KillRun(Ctx(token).get(), r, &resp));
    }
    {
      jobwheel::v1::GetRunLogRequest r;
      r.set_id(run_id);
      jobwheel::v1::GetRunLogResponse resp;
      out.push_back(stub_->GetRunLog(Ctx(token).get(), r, &resp));
    }
    std::vector<std::pair<int, std::string>> codes;
    for (const grpc::Status& s : out) codes.emplace_back(s.error_code(), s.error_message());
    return codes;
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
  std::string op_;
};

TEST_F(JobAdminScopeTest, AnotherAppsIdsAnswerExactlyLikeMissingIds) {
  jobwheel::v1::Job billing;
  ASSERT_TRUE(Create(kAdmin, NewJob("billing"), &billing).ok());
  jobwheel::v1::Run run;
  run.set_job_id(billing.id());
  run.set_app("billing");
  run.set_status(jobwheel::v1::RUN_STATUS_RUNNING);
  run.set_executor_address("127.0.0.1:7200");
  const int64_t run_id = store_.AddRun(run);
  const int64_t missing = billing.id() + 1000, missing_run = run_id + 1000;

  auto hidden = Probe(op_, billing.id(), run_id);
  auto absent = Probe(op_, missing, missing_run);
  ASSERT_EQ(hidden.size(), absent.size());
  for (size_t i = 0; i < hidden.size(); ++i) {
    EXPECT_EQ(hidden[i].first, grpc::StatusCode::NOT_FOUND) << i << " " << hidden[i].second;
    EXPECT_EQ(hidden[i].first, absent[i].first) << i;
    // Same shape: only the id differs.
    std::string expected = absent[i].second;
    const std::string from =
        i < 6 ? absl::StrCat("job ", missing) : absl::StrCat("run ", missing_run);
    const std::string to =
        i < 6 ? absl::StrCat("job ", billing.id()) : absl::StrCat("run ", run_id);
    ASSERT_EQ(expected.find(from), 0u) << expected;
    expected.replace(0, from.size(), to);
    EXPECT_EQ(hidden[i].second, expected) << i;
  }
  // Nothing changed, nothing fired.
  EXPECT_TRUE(store_.fires().empty());
  jobwheel::v1::GetJobRequest get;
  get.set_id(billing.id());
  jobwheel::v1::GetJobResponse got;
  ASSERT_TRUE(stub_->GetJob(Ctx(kAdmin).get(), get, &got).ok());
  EXPECT_EQ(got.job().param(), "");

  // Listing runs of that job id shows nothing, as for a missing job.
  jobwheel::v1::ListRunsRequest list;
  list.set_job_id(billing.id());
  jobwheel::v1::ListRunsResponse listed;
  ASSERT_TRUE(stub_->ListRuns(Ctx(op_).get(), list, &listed).ok());
  EXPECT_EQ(listed.runs_size(), 0);
  list.set_app("demo");
  ASSERT_TRUE(stub_->ListRuns(Ctx(op_).get(), list, &listed).ok());
  EXPECT_EQ(listed.runs_size(), 0);

  // A viewer of no app sees no job at all; a viewer of "*" sees it.
  const std::string none = Token("viewer-none", Role::kViewer, {});
  const std::string all = Token("viewer-all", Role::kViewer, {"*"});
  EXPECT_EQ(stub_->GetJob(Ctx(none).get(), get, &got).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(stub_->GetJob(Ctx(all).get(), get, &got).ok());
  jobwheel::v1::ListJobsRequest jobs;
  jobwheel::v1::ListJobsResponse jobs_listed;
  ASSERT_TRUE(stub_->ListJobs(Ctx(none).get(), jobs, &jobs_listed).ok());
  EXPECT_EQ(jobs_listed.jobs_size(), 0);
}

TEST_F(JobAdminScopeTest, ChildrenMustBeJobsOfAppsTheWriterMayOperate) {
  jobwheel::v1::Job billing, demo_child, parent;
  ASSERT_TRUE(Create(kAdmin, NewJob("billing"), &billing).ok());
  ASSERT_TRUE(Create(op_, NewJob("demo"), &demo_child).ok());
  const int64_t missing = billing.id() + 1000;

  // Create: another app's job is refused exactly like a missing one.
  grpc::Status cross = Create(op_, NewJob("demo", {demo_child.id(), billing.id()}));
  grpc::Status absent = Create(op_, NewJob("demo", {demo_child.id(), missing}));
  EXPECT_EQ(cross.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(absent.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(cross.error_message(),
            absl::StrCat("job.child_job_ids[1]: job ", billing.id(), " does not exist"));
  EXPECT_EQ(absent.error_message(),
            absl::StrCat("job.child_job_ids[1]: job ", missing, " does not exist"));

  // Its own app's child is fine, and its scope is stored.
  ASSERT_TRUE(Create(op_, NewJob("demo", {demo_child.id()}), &parent).ok());
  EXPECT_EQ(*store_.child_scope(parent.id()), Scope(std::vector<std::string>{"demo"}));

  // Update: adding another app's job is refused the same way; the job is unchanged.
  grpc::Status s = SetChildren(op_, parent.id(), {demo_child.id(), billing.id()});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            absl::StrCat("job.child_job_ids[1]: job ", billing.id(), " does not exist"));
  EXPECT_EQ(*store_.child_scope(parent.id()), Scope(std::vector<std::string>{"demo"}));

  // An admin may name any app's job: the scope becomes every app (nullopt).
  ASSERT_TRUE(SetChildren(kAdmin, parent.id(), {demo_child.id(), billing.id()}).ok());
  EXPECT_EQ(*store_.child_scope(parent.id()), Scope());
  // The operator may still pause, resume and edit other fields: the admin's list and scope stay.
  jobwheel::v1::PauseJobRequest pause;
  pause.set_id(parent.id());
  jobwheel::v1::PauseJobResponse paused;
  ASSERT_TRUE(stub_->PauseJob(Ctx(op_).get(), pause, &paused).ok());
  jobwheel::v1::UpdateJobRequest edit;
  edit.mutable_job()->set_id(parent.id());
  edit.mutable_job()->set_description("still mine");
  edit.mutable_update_mask()->add_paths("description");
  jobwheel::v1::UpdateJobResponse edited;
  ASSERT_TRUE(stub_->UpdateJob(Ctx(op_).get(), edit, &edited).ok());
  EXPECT_EQ(edited.job().child_job_ids_size(), 2);
  EXPECT_EQ(*store_.child_scope(parent.id()), Scope());
  // But changing the list means every child must be in its scope again.
  s = SetChildren(op_, parent.id(), {billing.id()});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(SetChildren(op_, parent.id(), {demo_child.id()}).ok());
  EXPECT_EQ(*store_.child_scope(parent.id()), Scope(std::vector<std::string>{"demo"}));

  // An operator of both apps may link them; an operator of "*" stores every app.
  const std::string both = Token("ops-both", Role::kOperator, {"demo", "billing"});
  ASSERT_TRUE(SetChildren(both, parent.id(), {billing.id()}).ok());
  EXPECT_EQ(*store_.child_scope(parent.id()), Scope(std::vector<std::string>{"demo", "billing"}));
  const std::string star = Token("ops-star", Role::kOperator, {"*"});
  ASSERT_TRUE(SetChildren(star, parent.id(), {billing.id(), demo_child.id()}).ok());
  EXPECT_EQ(*store_.child_scope(parent.id()), Scope());
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
