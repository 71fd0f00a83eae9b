// Tests for each XXL-JOB advisory class, against the real binaries and PostgreSQL:
//  - executor RPCs (Run/Kill/Log/...) without a token the dispatcher or scheduler signed for
//    that executor are refused (XXL-JOB's unauthenticated executor RCE);
//  - no default secret: every binary refuses to start without credentials unless
//    --insecure_dev, which it announces (XXL-JOB's default accessToken);
//  - script (GLUE) jobs need an ADMIN to create and the executor's opt-in to run;
//  - log reads stay inside the executor's log directory, and the scheduler proxies log and
//    kill calls only to registered executors of the run's app (XXL-JOB's arbitrary file read
//    and SSRF);
//  - roles: operators act on their apps only, viewers read, revoked tokens stop working
//    within 5 s, and only hashes of token secrets are stored.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/auth/token_authenticator.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/pg_test_db.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"
#include "pqxx/pqxx"

namespace jobwheel::security_testing {

using testing::Addr;
using testing::Ctx;
using testing::ReadFile;
using testing::Stack;
using testing::WriteFile;
namespace {

int NextInstance() {
  static std::atomic<int> next{0};
  return next.fetch_add(1);
}

using testing::Eventually;
using testing::PickFreePort;

// An ExecutorService that only counts calls: whatever reaches it was proxied.
class CountingExecutor final : public v1::ExecutorService::CallbackService {
 public:
  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* ctx, const v1::RunRequest*,
                                v1::RunResponse*) override {
    return Answer(ctx);
  }
  grpc::ServerUnaryReactor* Kill(grpc::CallbackServerContext* ctx, const v1::KillRequest*,
                                 v1::KillResponse* resp) override {
    resp->set_killed(true);
    return Answer(ctx);
  }
  grpc::ServerUnaryReactor* Log(grpc::CallbackServerContext* ctx, const v1::LogRequest*,
                                v1::LogResponse* resp) override {
    resp->add_lines("FROM THE FAKE EXECUTOR");
    return Answer(ctx);
  }
  int calls() const { return calls_.load(); }

 private:
  grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* ctx) {
    ++calls_;
    auto* r = ctx->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }
  std::atomic<int> calls_{0};
};

bool Contains(const std::string& haystack, const std::string& needle) {
  return absl::StrContains(haystack, needle);
}

class AdvisoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stack_ = new Stack(Stack::Options{});
    setup_ = stack_->StartServices();
    if (!setup_.ok()) return;
    // The executor authenticates with a per-app API token created through the admin API:
    // no shared executor secret is configured anywhere in this stack.
    auto secret = CreateToken(stack_->admin_token(), "exec-demo", v1::ROLE_EXECUTOR, {"demo"});
    if (!secret.ok()) {
      setup_ = secret.status();
      return;
    }
    executor_token_ = new std::string(*secret);
    setup_ = stack_->StartExecutor("demo", *executor_token_);
  }

  static void TearDownTestSuite() {
    delete stack_;
    delete executor_token_;
    stack_ = nullptr;
  }

  void SetUp() override { ASSERT_TRUE(setup_.ok()) << setup_ << "\n" << stack_->Logs(); }

  void TearDown() override {
    if (HasFailure()) std::cerr << stack_->Logs();
  }

  static absl::StatusOr<std::string> CreateToken(const std::string& as, const std::string& name,
                                                 v1::Role role, std::vector<std::string> apps) {
    auto stub = v1::TokenAdminService::NewStub(stack_->Channel(stack_->scheduler()));
    v1::CreateTokenRequest req;
    req.set_name(name);
    req.set_role(role);
    for (auto& a : apps) req.add_apps(a);
    v1::CreateTokenResponse resp;
    grpc::Status s = stub->CreateToken(Ctx(as).get(), req, &resp);
    if (!s.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
    }
    return resp.secret();
  }

  std::unique_ptr<v1::JobAdminService::Stub> Jobs() {
    return v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
  }
  std::unique_ptr<v1::ExecutorService::Stub> Executor() {
    return v1::ExecutorService::NewStub(stack_->Channel(stack_->executor()));
  }

  static v1::Job EchoJob(const std::string& app, const std::string& name) {
    v1::Job job;
    job.set_app(app);
    job.set_name(name);
    job.set_handler("echo");
    job.set_param("hello from " + name);
    job.mutable_schedule()->mutable_none();
    job.set_enabled(true);
    return job;
  }

  grpc::Status CreateJob(const std::string& token, const v1::Job& job, v1::Job* out = nullptr) {
    v1::CreateJobRequest req;
    *req.mutable_job() = job;
    v1::CreateJobResponse resp;
    grpc::Status s = Jobs()->CreateJob(Ctx(token).get(), req, &resp);
    if (out != nullptr) *out = resp.job();
    return s;
  }

  grpc::Status Trigger(const std::string& token, int64_t job_id) {
    v1::TriggerJobRequest req;
    req.set_id(job_id);
    v1::TriggerJobResponse resp;
    return Jobs()->TriggerJob(Ctx(token).get(), req, &resp);
  }

  // The job's runs as the admin sees them.
  std::vector<v1::Run> Runs(int64_t job_id) {
    v1::ListRunsRequest req;
    req.set_job_id(job_id);
    v1::ListRunsResponse resp;
    grpc::Status s = Jobs()->ListRuns(Ctx(stack_->admin_token()).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.runs().begin(), resp.runs().end()};
  }

  static Stack* stack_;
  static std::string* executor_token_;
  static absl::Status setup_;
};

Stack* AdvisoryTest::stack_ = nullptr;
std::string* AdvisoryTest::executor_token_ = nullptr;
absl::Status AdvisoryTest::setup_;

// XXL-JOB advisory class: unauthenticated calls to the executor (remote code execution).
TEST_F(AdvisoryTest, ExecutorRpcsNeedACallerTokenForThisExecutor) {
  auto api_admin = CreateToken(stack_->admin_token(), "api-admin", v1::ROLE_ADMIN, {});
  ASSERT_TRUE(api_admin.ok()) << api_admin.status();
  auto exec = Executor();
  const std::vector<std::pair<std::string, std::string>> callers = {
      {"no token", ""},
      {"a wrong token", "not-a-caller-token"},
      {"the dispatcher's token for another executor",
       stack_->ExecutorCallerToken("dispatcher", "demo", "127.0.0.1:1")},
      {"the scheduler's token for the dispatcher", stack_->CallerToken("scheduler", "dispatcher")},
      {"the dispatcher's token for this address as another app's executor",
       stack_->ExecutorCallerToken("dispatcher", "billing", stack_->executor())},
      {"a token for the bare address (no app)",
       stack_->CallerToken("dispatcher", stack_->executor())},
      {"the bootstrap admin token", stack_->admin_token()},
      {"an ADMIN API token", *api_admin},
      {"the executor's own token", *executor_token_},
      {"a well-formed unknown API token", *GenerateTokenSecret()},
  };
  for (const auto& [who, token] : callers) {
    SCOPED_TRACE(who);
    v1::RunRequest run;
    run.set_run_id(900001);
    run.set_job_id(900001);
    run.set_handler("echo");
    run.set_param("should never run");
    v1::RunResponse run_resp;
    EXPECT_EQ(exec->Run(Ctx(token).get(), run, &run_resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    v1::KillRequest kill;
    kill.set_run_id(900001);
    v1::KillResponse kill_resp;
    EXPECT_EQ(exec->Kill(Ctx(token).get(), kill, &kill_resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    v1::LogRequest log;
    log.set_run_id(900001);
    v1::LogResponse log_resp;
    EXPECT_EQ(exec->Log(Ctx(token).get(), log, &log_resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    v1::BeatResponse beat_resp;
    EXPECT_EQ(exec->Beat(Ctx(token).get(), {}, &beat_resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    v1::IdleBeatRequest idle;
    idle.set_job_id(900001);
    v1::IdleBeatResponse idle_resp;
    EXPECT_EQ(exec->IdleBeat(Ctx(token).get(), idle, &idle_resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  // Tokens the dispatcher or the scheduler signed for this executor pass authentication, and
  // none of the refused Run calls ran anything.
  v1::BeatResponse beat_resp;
  EXPECT_TRUE(
      exec->Beat(Ctx(stack_->ExecutorCallerToken("dispatcher", "demo", stack_->executor())).get(),
                 {}, &beat_resp)
          .ok());
  v1::LogRequest log;
  log.set_run_id(900001);
  v1::LogResponse log_resp;
  EXPECT_EQ(
      exec->Log(Ctx(stack_->ExecutorCallerToken("scheduler", "demo", stack_->executor())).get(),
                log, &log_resp)
          .error_code(),
      grpc::StatusCode::NOT_FOUND);
}

// XXL-JOB advisory class: a default access token shipped with the software.
TEST_F(AdvisoryTest, NoBinaryStartsWithoutCredentialsUnlessInsecureDevWhichItAnnounces) {
  auto dsn = testing::CreateTestDatabase();
  ASSERT_TRUE(dsn.ok()) << dsn.status();
  const std::string dir = stack_->dir() + "/nocreds";
  mkdir(dir.c_str(), 0755);
  struct Binary {
    std::string name;
    std::string path;
    std::vector<std::string> args;
  };
  auto binaries = [&](int port) {
    const std::string listen = "--listen=" + Addr(port);
    return std::vector<Binary>{
        {"scheduler",
         testing::kSchedulerBinary,
         {listen, "--db_dsn=" + *dsn, "--metrics_address=", "--dispatcher_target=127.0.0.1:1"}},
        {"registry", testing::kRegistryBinary, {listen, "--db_dsn=" + *dsn, "--metrics_address="}},
        {"dispatcher",
         testing::kDispatcherBinary,
         {listen, "--db_dsn=" + *dsn, "--metrics_address=", "--registry_target=127.0.0.1:1"}},
        {"demo_executor",
         testing::kDemoExecutorBinary,
         {listen, "--app=demo", "--registry_target=", "--dispatcher_target=", "--metrics_address=",
          "--log_dir=" + dir + "/logs", "--spool_dir=" + dir + "/spool"}},
    };
  };
  for (const Binary& b : binaries(PickFreePort())) {
    SCOPED_TRACE(b.name);
    const std::string log = dir + "/" + b.name + ".refused.log";
    absl::StatusOr<int> code = testing::RunToExit(b.path, b.args, log);
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_NE(*code, 0);
    const std::string text = ReadFile(log);
    EXPECT_TRUE(Contains(text, "token")) << text;
    EXPECT_TRUE(Contains(text, "--insecure_dev") || Contains(text, "insecure_dev")) << text;
  }
  // The explicit escape hatch works, and says so loudly.
  for (Binary b : binaries(PickFreePort())) {
    SCOPED_TRACE(b.name);
    testing::StackProcess p;
    p.name = b.name + "-insecure";
    p.binary = b.path;
    p.port = PickFreePort();
    p.log = dir + "/" + b.name + ".insecure.log";
    b.args[0] = "--listen=" + p.address();
    b.args.push_back("--insecure_dev");
    p.args = b.args;
    // With no registry to snapshot a dispatcher is up but never ready: wait for it to live.
    if (b.name == "dispatcher") p.health_service = "liveness";
    const absl::Status serving = stack_->Start(p);
    EXPECT_TRUE(serving.ok()) << serving << "\n" << ReadFile(p.log);
    // A warning-level line ("<date> <time> W <component>: ...") that names insecure mode.
    const std::string text = ReadFile(p.log);
    bool warned = false;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      warned = warned || (Contains(std::string(line), " W ") &&
                          Contains(absl::AsciiStrToLower(line), "insecure"));
    }
    EXPECT_TRUE(warned) << text;
    Stack::StopProcess(p);
  }
}

// Alarm webhooks cannot be pointed at arbitrary hosts (SSRF through alarms).
TEST_F(AdvisoryTest, SchedulerRefusesAWebhookOutsideTheAllowlist) {
  const std::string log = stack_->dir() + "/webhook.log";
  absl::StatusOr<int> code =
      testing::RunToExit(testing::kSchedulerBinary,
                         {"--listen=" + Addr(PickFreePort()), "--db_dsn=" + stack_->dsn(),
                          "--metrics_address=", "--admin_token_file=" + stack_->admin_token_file(),
                          "--signing_key_file=" + stack_->caller_keys().scheduler_key,
                          "--alarm_webhook_url=http://169.254.169.254/latest/meta-data",
                          "--alarm_webhook_allowlist=hooks.example.com"},
                         log);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_NE(*code, 0);
  EXPECT_TRUE(Contains(ReadFile(log), "--alarm_webhook_allowlist")) << ReadFile(log);
}

// XXL-JOB advisory class: GLUE (script) jobs as a code-execution channel for anyone who can
// edit jobs.
TEST_F(AdvisoryTest, ScriptJobsNeedAnAdminAndTheExecutorsOptIn) {
  auto op = CreateToken(stack_->admin_token(), "ops-scripts", v1::ROLE_OPERATOR, {"demo"});
  auto viewer = CreateToken(stack_->admin_token(), "viewer-scripts", v1::ROLE_VIEWER, {});
  ASSERT_TRUE(op.ok() && viewer.ok());
  const std::string marker = stack_->dir() + "/script-ran";
  v1::Job script = EchoJob("demo", "script-job");
  script.clear_handler();
  script.set_glue_type(v1::GLUE_TYPE_SCRIPT_SHELL);
  script.set_script_source("touch " + marker);

  grpc::Status s = CreateJob(*op, script);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(absl::StartsWith(s.error_message(), "job.glue_type:")) << s.error_message();
  EXPECT_EQ(CreateJob(*viewer, script).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  v1::Job created;
  s = CreateJob(stack_->admin_token(), script, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(Trigger(stack_->admin_token(), created.id()).ok());
  // The demo executor did not opt in: the run fails, saying why.
  std::vector<v1::Run> runs;
  ASSERT_TRUE(Eventually(
      [&] {
        runs = Runs(created.id());
        return !runs.empty() && runs[0].status() == v1::RUN_STATUS_FAILED;
      },
      absl::Seconds(20)))
      << (runs.empty() ? "no run" : runs[0].DebugString());
  EXPECT_TRUE(Contains(runs[0].trigger_message() + runs[0].result_message(), "script"))
      << runs[0].DebugString();

  // Even a dispatcher that ignored the registry's allow_scripts flag gets a refusal.
  v1::RunRequest run;
  auto instance = stack_->ExecutorInstance("demo", stack_->executor());
  ASSERT_TRUE(instance.ok()) << instance.status();
  run.set_app("demo");
  run.set_executor_instance(*instance);
  run.set_run_id(910001);
  run.set_job_id(created.id());
  run.set_glue_type(v1::GLUE_TYPE_SCRIPT_SHELL);
  run.set_script_source("touch " + marker);
  run.set_script_version(1);
  v1::RunResponse resp;
  s = Executor()->Run(
      Ctx(stack_->ExecutorCallerToken("dispatcher", "demo", stack_->executor())).get(), run, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.disposition(), v1::RUN_DISPOSITION_REJECTED);
  EXPECT_TRUE(Contains(resp.message(), "scripts are disabled")) << resp.message();
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "a script ran";
}

// XXL-JOB advisory classes: arbitrary file read through the log API, and the admin server
// as an SSRF proxy to arbitrary executor addresses.
TEST_F(AdvisoryTest, LogReadsStayInTheLogDirectoryAndProxiesOnlyReachRegisteredExecutors) {
  auto exec = Executor();
  const std::string scheduler =
      stack_->ExecutorCallerToken("scheduler", "demo", stack_->executor());
  for (int64_t bad : {int64_t{-1}, int64_t{0}, std::numeric_limits<int64_t>::min()}) {
    v1::LogRequest req;
    req.set_run_id(bad);
    v1::LogResponse resp;
    EXPECT_EQ(exec->Log(Ctx(scheduler).get(), req, &resp).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << bad;
  }
  {
    v1::LogRequest req;
    req.set_run_id(std::numeric_limits<int64_t>::max());
    v1::LogResponse resp;
    EXPECT_EQ(exec->Log(Ctx(scheduler).get(), req, &resp).error_code(),
              grpc::StatusCode::NOT_FOUND);
    req.set_run_id(1);
    req.set_max_lines(-5);
    EXPECT_EQ(exec->Log(Ctx(scheduler).get(), req, &resp).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  // A log file that is a symlink out of the log directory (absolute, and relative "../") is
  // refused, not followed.
  const std::string secret = WriteFile(stack_->dir() + "/outside-secret", "TOPSECRET\n");
  const std::string day = stack_->executor_log_dir() + "/" +
                          absl::FormatTime("%Y-%m-%d", RealClock::Get().Now(), absl::UTCTimeZone());
  mkdir(stack_->executor_log_dir().c_str(), 0755);
  mkdir(day.c_str(), 0755);
  ASSERT_EQ(symlink(secret.c_str(), (day + "/920001.log").c_str()), 0);
  ASSERT_EQ(symlink("../../outside-secret", (day + "/920002.log").c_str()), 0);
  for (int64_t id : {920001, 920002}) {
    v1::LogRequest req;
    req.set_run_id(id);
    v1::LogResponse resp;
    grpc::Status s = exec->Log(Ctx(scheduler).get(), req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << id << " " << s.error_message();
    EXPECT_EQ(resp.lines_size(), 0);
    EXPECT_FALSE(Contains(s.error_message(), "TOPSECRET"));
  }

  // The scheduler only proxies Log/Kill to addresses registered for the run's app.
  CountingExecutor fake;
  int port = 0;
  auto server = StartGrpcServer("127.0.0.1:0", {&fake}, {}, &port);
  ASSERT_TRUE(server.ok());
  const std::string fake_address = Addr(port);
  int64_t run_id = 0;
  {
    pqxx::connection conn(stack_->dsn());
    pqxx::work tx(conn);
    // Registered (and online) for another app only.
    tx.exec_params(
        "INSERT INTO executors (app, address, replica_id, session_id, online, lease_until) "
        "VALUES ('elsewhere', $1, 'r', 's', true, now() + interval '1 hour')",
        fake_address);
    run_id = tx.exec_params1(
                   "INSERT INTO runs (fire_id, job_id, app, trigger_type, status, "
                   "executor_address, scheduled_time) VALUES (999999, 999999, 'demo', 3, 2, $1, "
                   "now()) RETURNING id",
                   fake_address)[0]
                 .as<int64_t>();
    tx.commit();
  }
  v1::GetRunLogRequest get_log;
  get_log.set_id(run_id);
  v1::GetRunLogResponse log_resp;
  grpc::Status s = Jobs()->GetRunLog(Ctx(stack_->admin_token()).get(), get_log, &log_resp);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(log_resp.lines_size(), 0);
  v1::KillRunRequest kill;
  kill.set_id(run_id);
  v1::KillRunResponse kill_resp;
  s = Jobs()->KillRun(Ctx(stack_->admin_token()).get(), kill, &kill_resp);
  ASSERT_TRUE(s.ok()) << s.error_message();  // Marked KILLED without calling anyone.
  EXPECT_TRUE(Contains(kill_resp.run().result_message(), "not a registered executor"))
      << kill_resp.run().DebugString();
  EXPECT_EQ(fake.calls(), 0);
  (*server)->Shutdown();
}

// Roles and token lifecycle.
TEST_F(AdvisoryTest, RolesScopeTokensAndRevocationIsQuick) {
  const std::string admin = stack_->admin_token();
  auto op = CreateToken(admin, "ops-demo", v1::ROLE_OPERATOR, {"demo"});
  auto viewer = CreateToken(admin, "viewer-demo", v1::ROLE_VIEWER, {"demo"});
  ASSERT_TRUE(op.ok() && viewer.ok());

  // The operator runs its app's job end to end (executor and results on a per-app token).
  v1::Job mine;
  grpc::Status s = CreateJob(*op, EchoJob("demo", "ops-echo"), &mine);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(Trigger(*op, mine.id()).ok());
  std::vector<v1::Run> runs;
  ASSERT_TRUE(Eventually(
      [&] {
        runs = Runs(mine.id());
        return !runs.empty() && runs[0].status() == v1::RUN_STATUS_SUCCEEDED;
      },
      absl::Seconds(20)))
      << (runs.empty() ? "no run" : runs[0].DebugString());
  v1::GetRunLogRequest get_log;
  get_log.set_id(runs[0].id());
  v1::GetRunLogResponse log;
  s = Jobs()->GetRunLog(Ctx(*viewer).get(), get_log, &log);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::string all_lines;
  for (const auto& line : log.lines()) absl::StrAppend(&all_lines, line, "\n");
  EXPECT_TRUE(Contains(all_lines, "hello from ops-echo")) << all_lines;

  // Another app's job: invisible and untouchable for the operator.
  v1::Job theirs;
  ASSERT_TRUE(CreateJob(admin, EchoJob("billing", "billing-echo"), &theirs).ok());
  EXPECT_EQ(CreateJob(*op, EchoJob("billing", "ops-billing")).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Another app's ids answer exactly like ids that do not exist (no existence oracle).
  EXPECT_EQ(Trigger(*op, theirs.id()).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::GetJobRequest get;
  get.set_id(theirs.id());
  v1::GetJobResponse got;
  EXPECT_EQ(Jobs()->GetJob(Ctx(*op).get(), get, &got).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::ListJobsRequest list;
  v1::ListJobsResponse listed;
  ASSERT_TRUE(Jobs()->ListJobs(Ctx(*op).get(), list, &listed).ok());
  for (const auto& j : listed.jobs()) EXPECT_EQ(j.app(), "demo") << j.name();
  list.set_app("billing");
  EXPECT_EQ(Jobs()->ListJobs(Ctx(*op).get(), list, &listed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(Runs(theirs.id()).empty());

  // The viewer reads but cannot create or trigger.
  EXPECT_EQ(CreateJob(*viewer, EchoJob("demo", "viewer-job")).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Trigger(*viewer, mine.id()).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  get.set_id(mine.id());
  EXPECT_TRUE(Jobs()->GetJob(Ctx(*viewer).get(), get, &got).ok());

  // Tokens and apps are admin business.
  auto tokens = v1::TokenAdminService::NewStub(stack_->Channel(stack_->scheduler()));
  v1::ListTokensResponse token_list;
  EXPECT_EQ(tokens->ListTokens(Ctx(*op).get(), {}, &token_list).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(CreateToken(*op, "escalate", v1::ROLE_ADMIN, {}).status().code(),
            absl::StatusCode::kPermissionDenied);
  auto apps = v1::AppAdminService::NewStub(stack_->Channel(stack_->registry()));
  v1::CreateAppRequest create_app;
  create_app.mutable_app()->set_name("ops-made");
  v1::CreateAppResponse app_resp;
  EXPECT_EQ(apps->CreateApp(Ctx(*op).get(), create_app, &app_resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::ListAppsResponse app_list;
  EXPECT_TRUE(apps->ListApps(Ctx(*op).get(), {}, &app_list).ok());

  // Secrets are stored as SHA-256 hashes only.
  ASSERT_TRUE(tokens->ListTokens(Ctx(admin).get(), {}, &token_list).ok());
  {
    pqxx::connection conn(stack_->dsn());
    pqxx::work tx(conn);
    const std::string everything =
        tx.exec1("SELECT string_agg(row_to_json(t)::text, '\n') FROM tokens t")[0]
            .as<std::string>();
    for (const std::string& secret : {*op, *viewer, *executor_token_}) {
      EXPECT_FALSE(Contains(everything, secret.substr(3))) << everything;
      EXPECT_EQ(tx.exec_params1("SELECT count(*) FROM tokens WHERE secret_hash = $1",
                                HashTokenSecret(secret))[0]
                    .as<int>(),
                1);
    }
  }

  // Revocation takes effect within 5 s on the scheduler and the registry.
  int64_t op_id = 0;
  for (const auto& t : token_list.tokens()) {
    if (t.name() == "ops-demo") op_id = t.id();
  }
  ASSERT_GT(op_id, 0);
  v1::RevokeTokenRequest revoke;
  revoke.set_id(op_id);
  v1::RevokeTokenResponse revoked;
  ASSERT_TRUE(tokens->RevokeToken(Ctx(admin).get(), revoke, &revoked).ok());
  const absl::Time t0 = RealClock::Get().Now();
  EXPECT_TRUE(Eventually(
      [&] {
        v1::ListJobsResponse r;
        v1::ListAppsResponse a;
        return Jobs()->ListJobs(Ctx(*op).get(), {}, &r).error_code() ==
                   grpc::StatusCode::UNAUTHENTICATED &&
               apps->ListApps(Ctx(*op).get(), {}, &a).error_code() ==
                   grpc::StatusCode::UNAUTHENTICATED;
      },
      absl::Seconds(5)))
      << "still accepted " << absl::FormatDuration(RealClock::Get().Now() - t0)
      << " after revocation";
}

// Executors register only for the apps on their token.
TEST_F(AdvisoryTest, ExecutorTokensAreScopedToTheirApps) {
  auto billing = CreateToken(stack_->admin_token(), "exec-billing", v1::ROLE_EXECUTOR, {"billing"});
  ASSERT_TRUE(billing.ok());
  auto registry = v1::RegistryService::NewStub(stack_->Channel(stack_->registry()));
  auto heartbeat = [&](const std::string& token, const std::string& app) {
    auto ctx = Ctx(token);
    auto stream = registry->Heartbeat(ctx.get());
    v1::HeartbeatRequest req;
    req.mutable_register_()->set_app(app);
    req.mutable_register_()->set_address("127.0.0.1:1");
    // A process of its own: a fresh instance id (a reconnect would keep its id).
    req.mutable_register_()->set_instance_id(
        absl::StrCat("security-test-", getpid(), "-", NextInstance()));
    req.mutable_register_()->add_handlers("echo");
    stream->Write(req);
    v1::HeartbeatResponse resp;
    if (stream->Read(&resp) && resp.has_registered()) {
      ctx->TryCancel();
      (void)stream->Finish();
      return grpc::Status::OK;
    }
    return stream->Finish();
  };
  grpc::Status s = heartbeat(*billing, "demo");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(heartbeat("", "demo").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(heartbeat(stack_->admin_token(), "demo").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(heartbeat(*billing, "billing").ok());

  // Results: a billing executor cannot finish a demo run; the demo executor can.
  int64_t run_id = 0;
  {
    pqxx::connection conn(stack_->dsn());
    pqxx::work tx(conn);
    run_id = tx.exec1(
                   "INSERT INTO runs (fire_id, job_id, app, trigger_type, status, "
                   "scheduled_time) VALUES (930001, 930001, 'demo', 3, 2, now()) RETURNING id")[0]
                 .as<int64_t>();
    tx.commit();
  }
  auto dispatcher = v1::DispatcherService::NewStub(stack_->Channel(stack_->dispatcher()));
  v1::ReportResultsRequest report;
  report.add_results()->set_run_id(run_id);
  report.mutable_results(0)->set_status(v1::RUN_STATUS_SUCCEEDED);
  report.mutable_results(0)->set_message("spoofed");
  v1::ReportResultsResponse acked;
  s = dispatcher->ReportResults(Ctx(*billing).get(), report, &acked);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(acked.acked_run_ids_size(), 0);
  // Refused as a run that does not exist is: nothing tells billing the id is demo's.
  v1::ReportResultsRequest unknown = report;
  unknown.mutable_results(0)->set_run_id(run_id + 1000000);
  v1::ReportResultsResponse unknown_answer;
  s = dispatcher->ReportResults(Ctx(*billing).get(), unknown, &unknown_answer);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(acked.refused_run_ids_size(), 1);
  ASSERT_EQ(unknown_answer.refused_run_ids_size(), 1);
  EXPECT_EQ(acked.acked_run_ids_size(), unknown_answer.acked_run_ids_size());
  auto run_status = [&] {
    pqxx::connection conn(stack_->dsn());
    pqxx::work tx(conn);
    return tx.exec_params1("SELECT status FROM runs WHERE id = $1", run_id)[0].as<int>();
  };
  EXPECT_EQ(run_status(), v1::RUN_STATUS_RUNNING);
  report.mutable_results(0)->set_message("done");
  s = dispatcher->ReportResults(Ctx(*executor_token_).get(), report, &acked);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(acked.acked_run_ids_size(), 1);
  EXPECT_EQ(run_status(), v1::RUN_STATUS_SUCCEEDED);

  // An executor token is no admin credential.
  v1::ListJobsResponse r;
  EXPECT_EQ(Jobs()->ListJobs(Ctx(*billing).get(), {}, &r).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

}  // namespace
}  // namespace jobwheel::security_testing
