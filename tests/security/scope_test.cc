// App scope with real processes (registry, dispatcher, scheduler, one demo executor per app on
// the test PostgreSQL): an operator of app demo cannot make a job of app billing fire by any
// path (child job at creation or update, trigger, moving apps, a child moved to billing after
// it was linked), ids of billing's jobs and runs answer exactly like missing ids, and a flood of
// junk API-shaped tokens does not reach the database beyond the per-peer limit.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/auth/token_authenticator.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "pqxx/pqxx"

namespace jobwheel::security_testing {

using testing::Ctx;
using testing::Stack;
namespace {

using testing::Eventually;

class ScopeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stack_ = new Stack(Stack::Options{});
    setup_ = stack_->StartServices();
    for (const char* app : {"demo", "billing"}) {
      if (!setup_.ok()) return;
      Stack::ExecutorSpec spec;
      spec.app = app;
      setup_ = stack_->AddExecutor(spec).status();
    }
    if (!setup_.ok()) return;
    auto op = stack_->CreateToken("ops-demo", v1::ROLE_OPERATOR, {"demo"});
    if (!op.ok()) {
      setup_ = op.status();
      return;
    }
    op_ = new std::string(*op);
  }
  static void TearDownTestSuite() {
    delete stack_;
    delete op_;
    stack_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(setup_.ok()) << setup_ << "\n" << stack_->Logs(); }
  void TearDown() override {
    if (HasFailure()) std::cerr << stack_->Logs();
  }

  static std::unique_ptr<v1::JobAdminService::Stub> Jobs() {
    return v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
  }
  static const std::string& Admin() { return stack_->admin_token(); }

  static v1::Job EchoJob(const std::string& app, const std::string& name,
                         std::vector<int64_t> children = {}) {
    v1::Job job;
    job.set_app(app);
    job.set_name(name);
    job.set_handler("echo");
    job.mutable_schedule()->mutable_none();
    job.set_enabled(true);
    for (int64_t c : children) job.add_child_job_ids(c);
    return job;
  }

  static grpc::Status Create(const std::string& token, const v1::Job& job, v1::Job* out = nullptr) {
    v1::CreateJobRequest req;
    *req.mutable_job() = job;
    v1::CreateJobResponse resp;
    grpc::Status s = Jobs()->CreateJob(Ctx(token).get(), req, &resp);
    if (out != nullptr) *out = resp.job();
    return s;
  }
  static grpc::Status Update(const std::string& token, const v1::Job& job,
                             std::vector<std::string> paths) {
    v1::UpdateJobRequest req;
    *req.mutable_job() = job;
    for (auto& p : paths) req.mutable_update_mask()->add_paths(p);
    v1::UpdateJobResponse resp;
    return Jobs()->UpdateJob(Ctx(token).get(), req, &resp);
  }
  static grpc::Status Trigger(const std::string& token, int64_t id) {
    v1::TriggerJobRequest req;
    req.set_id(id);
    v1::TriggerJobResponse resp;
    return Jobs()->TriggerJob(Ctx(token).get(), req, &resp);
  }
  static std::vector<v1::Run> Runs(int64_t job_id) {
    v1::ListRunsRequest req;
    req.set_job_id(job_id);
    v1::ListRunsResponse resp;
    grpc::Status s = Jobs()->ListRuns(Ctx(Admin()).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.runs().begin(), resp.runs().end()};
  }
  static bool Succeeded(int64_t job_id) {
    for (const v1::Run& r : Runs(job_id)) {
      if (r.status() == v1::RUN_STATUS_SUCCEEDED) return true;
    }
    return false;
  }
  // Executions of `job_id` by any executor, and fires of it in the database.
  static int Executions(int64_t job_id) {
    int n = 0;
    for (const testing::Execution& e : stack_->Executions()) n += e.start && e.job_id == job_id;
    return n;
  }
  static int64_t Query(const std::string& sql) {
    pqxx::connection conn(stack_->dsn());
    pqxx::nontransaction tx(conn);
    return tx.exec1(sql)[0].as<int64_t>();
  }
  static int64_t Fires(int64_t job_id) {
    return Query(absl::StrCat("SELECT count(*) FROM fires WHERE job_id = ", job_id));
  }

  static Stack* stack_;
  static std::string* op_;
  static absl::Status setup_;
};

Stack* ScopeTest::stack_ = nullptr;
std::string* ScopeTest::op_ = nullptr;
absl::Status ScopeTest::setup_;

TEST_F(ScopeTest, ADemoOperatorCannotMakeABillingJobFireByAnyPath) {
  v1::Job billing, demo_child, parent, moved;
  ASSERT_TRUE(Create(Admin(), EchoJob("billing", "billing-job"), &billing).ok());
  ASSERT_TRUE(Create(*op_, EchoJob("demo", "demo-child"), &demo_child).ok());
  const int64_t missing = billing.id() + 100000;

  // 1. Create a demo job with billing's job as a child: refused exactly like a missing id.
  grpc::Status cross = Create(*op_, EchoJob("demo", "p1", {demo_child.id(), billing.id()}));
  grpc::Status absent = Create(*op_, EchoJob("demo", "p1", {demo_child.id(), missing}));
  EXPECT_EQ(cross.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(cross.error_code(), absent.error_code());
  EXPECT_EQ(cross.error_message(),
            absl::StrCat("job.child_job_ids[1]: job ", billing.id(), " does not exist"));
  EXPECT_EQ(absent.error_message(),
            absl::StrCat("job.child_job_ids[1]: job ", missing, " does not exist"));

  // 2. Update a demo job to add it: the same.
  ASSERT_TRUE(Create(*op_, EchoJob("demo", "parent", {demo_child.id()}), &parent).ok());
  v1::Job add = parent;
  add.add_child_job_ids(billing.id());
  grpc::Status s = Update(*op_, add, {"child_job_ids"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            absl::StrCat("job.child_job_ids[1]: job ", billing.id(), " does not exist"));

  // 3. Trigger it, pause/resume it, move it into demo: answered as for a missing id.
  s = Trigger(*op_, billing.id());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), absl::StrCat("job ", billing.id(), " not found"));
  EXPECT_EQ(Trigger(*op_, missing).error_message(), absl::StrCat("job ", missing, " not found"));
  v1::Job to_demo;
  to_demo.set_id(billing.id());
  to_demo.set_app("demo");
  s = Update(*op_, to_demo, {"app"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();

  // 4. Move its own job (with a demo child) into billing: refused.
  ASSERT_TRUE(Create(*op_, EchoJob("demo", "to-move"), &moved).ok());
  v1::Job to_billing;
  to_billing.set_id(moved.id());
  to_billing.set_app("billing");
  s = Update(*op_, to_billing, {"app"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();

  // 5. A child linked while it was in demo, then moved to billing by an admin, does not fire
  //    in billing when the operator triggers the parent (fire-time check of the parent's
  //    child scope); the parent's other demo child does.
  v1::Job later_billing, parent2;
  ASSERT_TRUE(Create(*op_, EchoJob("demo", "later-billing"), &later_billing).ok());
  ASSERT_TRUE(
      Create(*op_, EchoJob("demo", "parent2", {demo_child.id(), later_billing.id()}), &parent2)
          .ok());
  v1::Job admin_move;
  admin_move.set_id(later_billing.id());
  admin_move.set_app("billing");
  ASSERT_TRUE(Update(Admin(), admin_move, {"app"}).ok());
  ASSERT_TRUE(Trigger(*op_, parent2.id()).ok());
  ASSERT_TRUE(Eventually([&] { return Succeeded(demo_child.id()); }, absl::Seconds(30)))
      << "the same-app child never ran";

  // Control: a link an ADMIN made does fire across apps, so the check above can fail.
  v1::Job admin_parent, billing_control;
  ASSERT_TRUE(Create(Admin(), EchoJob("billing", "billing-control"), &billing_control).ok());
  ASSERT_TRUE(
      Create(Admin(), EchoJob("demo", "admin-parent", {billing_control.id()}), &admin_parent).ok());
  ASSERT_TRUE(Trigger(*op_, admin_parent.id()).ok());
  ASSERT_TRUE(Eventually([&] { return Executions(billing_control.id()) > 0; }, absl::Seconds(30)));

  // Give the leader's monitors a few more passes, then: billing's jobs never fired or ran.
  absl::SleepFor(absl::Seconds(3));
  EXPECT_EQ(Fires(billing.id()), 0);
  EXPECT_EQ(Executions(billing.id()), 0);
  EXPECT_EQ(Fires(later_billing.id()), 0);
  EXPECT_EQ(Executions(later_billing.id()), 0);
  EXPECT_TRUE(Runs(billing.id()).empty());
}

TEST_F(ScopeTest, AnotherAppsRunIdsAnswerLikeMissingOnes) {
  v1::Job billing;
  ASSERT_TRUE(Create(Admin(), EchoJob("billing", "billing-run"), &billing).ok());
  ASSERT_TRUE(Trigger(Admin(), billing.id()).ok());
  ASSERT_TRUE(Eventually([&] { return Succeeded(billing.id()); }, absl::Seconds(30)));
  const int64_t run = Runs(billing.id()).front().id();
  const int64_t missing = run + 100000;
  auto probe = [&](int64_t id) {
    std::vector<std::pair<int, std::string>> out;
    v1::GetRunRequest get;
    get.set_id(id);
    v1::GetRunResponse got;
    grpc::Status s = Jobs()->GetRun(Ctx(*op_).get(), get, &got);
    out.emplace_back(s.error_code(), s.error_message());
    v1::GetRunLogRequest log;
    log.set_id(id);
    v1::GetRunLogResponse logged;
    s = Jobs()->GetRunLog(Ctx(*op_).get(), log, &logged);
    out.emplace_back(s.error_code(), s.error_message());
    v1::KillRunRequest kill;
    kill.set_id(id);
    v1::KillRunResponse killed;
    s = Jobs()->KillRun(Ctx(*op_).get(), kill, &killed);
    out.emplace_back(s.error_code(), s.error_message());
    return out;
  };
  auto hidden = probe(run);
  auto absent = probe(missing);
  for (size_t i = 0; i < hidden.size(); ++i) {
    EXPECT_EQ(hidden[i].first, grpc::StatusCode::NOT_FOUND) << hidden[i].second;
    EXPECT_EQ(hidden[i].first, absent[i].first);
    EXPECT_EQ(hidden[i].second, absl::StrCat("run ", run, " not found"));
    EXPECT_EQ(absent[i].second, absl::StrCat("run ", missing, " not found"));
  }
}

TEST_F(ScopeTest, AJunkTokenFloodDoesNotReachTheDatabaseBeyondThePeerLimit) {
  // Lookups of the tokens table (every FindActive is one); a backend reports its statistics
  // to pg_stat_user_tables at most 10 s after its last transaction (PostgreSQL 15's idle
  // flush), so the count is read again after that. Lookups still unreported at the first read
  // only add to the difference.
  auto scans = [] {
    return Query(
        "SELECT COALESCE(seq_scan, 0) + COALESCE(idx_scan, 0) FROM pg_stat_user_tables "
        "WHERE relname = 'tokens'");
  };
  const int64_t before = scans();
  constexpr int kJunk = 1500;
  int unauthenticated = 0, exhausted = 0, other = 0;
  const absl::Time start = RealClock::Get().Now();
  auto stub = Jobs();
  for (int i = 0; i < kJunk; ++i) {
    v1::ListJobsRequest req;
    v1::ListJobsResponse resp;
    grpc::Status s = stub->ListJobs(Ctx(*GenerateTokenSecret()).get(), req, &resp);
    if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      ++unauthenticated;
    } else if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++exhausted;
    } else {
      ++other;
    }
  }
  const double seconds = absl::ToDoubleSeconds(RealClock::Get().Now() - start);
  // While this peer is over its limit, known credentials keep working from the same address.
  v1::ListJobsRequest req;
  v1::ListJobsResponse resp;
  EXPECT_TRUE(stub->ListJobs(Ctx(Admin()).get(), req, &resp).ok());
  EXPECT_TRUE(stub->ListJobs(Ctx(*op_).get(), req, &resp).ok());
  absl::SleepFor(absl::Seconds(11));
  const int64_t after = scans();
  std::printf(
      "junk flood: %d tokens in %.1f s: unauthenticated=%d resource_exhausted=%d "
      "other=%d token_table_scans=%lld\n",
      kJunk, seconds, unauthenticated, exhausted, other, static_cast<long long>(after - before));
  EXPECT_EQ(other, 0);
  // Burst 20, then 5 a second (TokenAuthenticator defaults), with slack for other services'
  // lookups of the executor tokens.
  const double allowed = 20 + 5 * seconds;
  EXPECT_LE(unauthenticated, allowed + 1);
  EXPECT_GT(exhausted, kJunk / 2);
  EXPECT_LT(after - before, allowed + 100) << "the flood reached the database";
}

}  // namespace
}  // namespace jobwheel::security_testing
