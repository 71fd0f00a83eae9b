// The console binary in front of the real registry, dispatcher and scheduler on PostgreSQL:
// the Connect gateway end to end (auth forwarding, errors, allow-list, limits), the pages and
// their headers, health, graceful shutdown, and that no token reaches the console's log.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"

namespace jobwheel::console_testing {
namespace {

using testing::Ctx;
using testing::PickFreePort;
using testing::ReadFile;
using testing::Stack;
using testing::StackProcess;
using testing::WriteFile;

constexpr char kListJobs[] = "/jobwheel.v1.JobAdminService/ListJobs";
constexpr char kCreateJob[] = "/jobwheel.v1.JobAdminService/CreateJob";
constexpr char kIndex[] = "<!doctype html><title>console test page</title>";

// An HTTP client of a console process the stack started.
std::unique_ptr<httplib::Client> ClientOf(const StackProcess& console) {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", console.port);
  client->set_read_timeout(15, 0);
  return client;
}

// The "message" of a Connect error body (empty if the body is not one).
std::string ErrorMessage(const std::string& body) {
  google::protobuf::Struct s;
  if (!google::protobuf::util::JsonStringToMessage(body, &s).ok()) return "";
  auto it = s.fields().find("message");
  return it == s.fields().end() ? "" : it->second.string_value();
}

std::string ErrorCode(const std::string& body) {
  google::protobuf::Struct s;
  if (!google::protobuf::util::JsonStringToMessage(body, &s).ok()) return "";
  auto it = s.fields().find("code");
  return it == s.fields().end() ? "" : it->second.string_value();
}

std::string JobJson(const std::string& name, const std::string& cron) {
  return absl::StrCat(R"({"job":{"app":"demo","name":")", name,
                      R"(","handler":"echo","schedule":{"cron":{"expression":")", cron,
                      R"(","timeZone":"UTC"}},"routingStrategy":"ROUTING_STRATEGY_ROUND"}})");
}

class ConsoleTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stack_ = new Stack(Stack::Options{});
    setup_ = stack_->StartServices();
    if (!setup_.ok()) return;
    web_root_ = new std::string(stack_->dir() + "/web");
    mkdir(web_root_->c_str(), 0755);
    WriteFile(*web_root_ + "/index.html", kIndex);
    WriteFile(*web_root_ + "/app.mjs", "export const answer = 42;\n");
    WriteFile(stack_->dir() + "/outside.txt", "outside the web root");
    // Two jobs made over gRPC, so the gateway's answer is checked against another path in.
    auto stub = v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
    for (const char* name : {"console-nightly", "console-hourly"}) {
      v1::CreateJobRequest req;
      v1::Job* job = req.mutable_job();
      job->set_app("demo");
      job->set_name(name);
      job->set_handler("echo");
      job->mutable_schedule()->mutable_cron()->set_expression("0 0 3 * * ?");
      job->set_routing_strategy(v1::ROUTING_STRATEGY_ROUND);
      v1::CreateJobResponse resp;
      grpc::Status s = stub->CreateJob(Ctx(stack_->admin_token()).get(), req, &resp);
      if (!s.ok()) {
        setup_ = absl::InternalError(absl::StrCat("CreateJob ", name, ": ", s.error_message()));
        return;
      }
    }
    auto console = StartConsole("console", stack_->scheduler());
    setup_ = console.status();
    if (console.ok()) console_ = *console;
  }

  static void TearDownTestSuite() {
    console_ = nullptr;
    delete stack_;
    delete web_root_;
    stack_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(setup_.ok()) << setup_ << "\n" << (stack_ ? stack_->Logs() : "");
    client_ = ClientOf(*console_);
  }

  void TearDown() override {
    if (HasFailure() && console_ != nullptr) {
      std::cerr << "console log:\n" << ReadFile(console_->log) << stack_->Logs();
    }
  }

  // Starts a console (its JSON log in <stack dir>/<name>.log) against `scheduler` and waits
  // until it answers /healthz.
  static absl::StatusOr<StackProcess*> StartConsole(const std::string& name,
                                                    const std::string& scheduler) {
    Stack::ConsoleSpec spec;
    spec.name = name;
    spec.scheduler_target = scheduler;
    spec.extra_flags = {"--web_root=" + *web_root_, "--max_body_bytes=65536", "--log_json"};
    return stack_->StartConsole(spec);
  }

  httplib::Result Post(const std::string& path, const std::string& body, const std::string& token) {
    httplib::Headers headers = {{"Connect-Protocol-Version", "1"}};
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    return client_->Post(path.c_str(), headers, body, "application/json");
  }

  static Stack* stack_;
  static absl::Status setup_;
  static std::string* web_root_;
  static StackProcess* console_;  // Owned by stack_.
  std::unique_ptr<httplib::Client> client_;
};

Stack* ConsoleTest::stack_ = nullptr;
absl::Status ConsoleTest::setup_;
std::string* ConsoleTest::web_root_ = nullptr;
StackProcess* ConsoleTest::console_ = nullptr;

TEST_F(ConsoleTest, ListJobsWithTheAdminToken) {
  auto res = Post(kListJobs, R"({"app":"demo","pageSize":50})", stack_->admin_token());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(res->get_header_value("Cache-Control"), "no-store");
  v1::ListJobsResponse jobs;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(res->body, &jobs).ok()) << res->body;
  std::vector<std::string> names;
  for (const v1::Job& job : jobs.jobs()) names.push_back(job.name());
  EXPECT_NE(std::find(names.begin(), names.end(), "console-nightly"), names.end()) << res->body;
  EXPECT_NE(std::find(names.begin(), names.end(), "console-hourly"), names.end()) << res->body;
  // proto3 JSON mapping: lowerCamel names, enums by name.
  EXPECT_TRUE(absl::StrContains(res->body, R"("routingStrategy":"ROUTING_STRATEGY_ROUND")"))
      << res->body;
}

TEST_F(ConsoleTest, CreateThroughTheConsoleThenGetOverGrpc) {
  auto res = Post(kCreateJob, JobJson("console-made", "*/30 * * * * ?"), stack_->admin_token());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  v1::CreateJobResponse created;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(res->body, &created).ok()) << res->body;
  ASSERT_GT(created.job().id(), 0);
  auto stub = v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
  v1::GetJobRequest get;
  get.set_id(created.job().id());
  v1::GetJobResponse got;
  grpc::Status s = stub->GetJob(Ctx(stack_->admin_token()).get(), get, &got);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(got.job().name(), "console-made");
  EXPECT_EQ(got.job().schedule().cron().expression(), "*/30 * * * * ?");
}

TEST_F(ConsoleTest, NoTokenOrAWrongOneIsUnauthenticated) {
  auto res = Post(kListJobs, "{}", "");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401) << res->body;
  EXPECT_EQ(ErrorCode(res->body), "unauthenticated") << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");

  res = Post(kListJobs, "{}", "not-a-token");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401) << res->body;
  EXPECT_EQ(ErrorCode(res->body), "unauthenticated") << res->body;
}

TEST_F(ConsoleTest, BadJsonAndUnknownFieldsAreInvalidArgumentNamingTheField) {
  auto res = Post(kListJobs, R"({"app":"demo","pageSise":5})", stack_->admin_token());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(ErrorCode(res->body), "invalid_argument");
  EXPECT_TRUE(absl::StrContains(ErrorMessage(res->body), "pageSise")) << res->body;

  res = Post(kListJobs, R"({"app":)", stack_->admin_token());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(ErrorCode(res->body), "invalid_argument");
}

TEST_F(ConsoleTest, BackendValidationErrorsArriveIntact) {
  const std::string bad = JobJson("console-bad-cron", "61 * * * * ?");
  // What the scheduler itself says about this job over gRPC...
  v1::CreateJobRequest req;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(bad, &req).ok());
  auto stub = v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
  v1::CreateJobResponse unused;
  grpc::Status direct = stub->CreateJob(Ctx(stack_->admin_token()).get(), req, &unused);
  ASSERT_EQ(direct.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << direct.error_message();
  // ...is what the console answers, code and message.
  auto res = Post(kCreateJob, bad, stack_->admin_token());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(ErrorCode(res->body), "invalid_argument");
  EXPECT_EQ(ErrorMessage(res->body), direct.error_message());
}

TEST_F(ConsoleTest, UnknownAndInternalProceduresAreNotServed) {
  for (const char* path :
       {"/jobwheel.v1.JobAdminService/DropAllJobs", "/jobwheel.v1.DispatcherService/Dispatch",
        "/jobwheel.v1.DispatcherService/ReportResults",
        "/jobwheel.v1.RegistryService/WatchExecutors", "/jobwheel.v1.RegistryService/Heartbeat",
        "/jobwheel.v1.ExecutorService/Run", "/grpc.health.v1.Health/Check"}) {
    // Even a token Dispatch accepts (the scheduler's) gets nowhere.
    auto res = Post(path, "{}", stack_->CallerToken("scheduler", "dispatcher"));
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path << ": " << res->body;
    EXPECT_EQ(ErrorCode(res->body), "unimplemented") << path;
  }
}

TEST_F(ConsoleTest, RegistryServicesAreRouted) {
  auto res = Post("/jobwheel.v1.AppAdminService/ListApps", "{}", stack_->admin_token());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  res = Post("/jobwheel.v1.RegistryService/ListExecutors", R"({"app":"demo"})",
             stack_->admin_token());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  res = Post("/jobwheel.v1.LeadershipService/GetLeader", "{}", stack_->admin_token());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

TEST_F(ConsoleTest, WrongContentTypeWrongMethodAndOversizedBodyAreRefused) {
  auto res = client_->Post(kListJobs, {{"Authorization", "Bearer " + stack_->admin_token()}},
                           "app=demo", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 415) << res->body;

  res = client_->Get(kListJobs, {{"Authorization", "Bearer " + stack_->admin_token()}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405) << res->body;
  EXPECT_EQ(res->get_header_value("Allow"), "POST");

  const std::string huge = absl::StrCat(R"({"app":")", std::string(100000, 'x'), R"("})");
  res = Post(kListJobs, huge, stack_->admin_token());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413) << res->body;
  EXPECT_EQ(ErrorCode(res->body), "resource_exhausted");
}

TEST_F(ConsoleTest, PagesCarryTheSecurityHeaders) {
  auto res = client_->Get("/");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->body, kIndex);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(res->get_header_value("Content-Security-Policy"),
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
            "frame-ancestors 'none'");
  EXPECT_EQ(res->get_header_value("X-Frame-Options"), "DENY");
  EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(res->get_header_value("Referrer-Policy"), "no-referrer");

  res = client_->Get("/app.mjs");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/javascript; charset=utf-8");

  // API answers carry them too.
  res = Post(kListJobs, "{}", "");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("X-Frame-Options"), "DENY");
}

TEST_F(ConsoleTest, TraversalOutOfTheWebRootIsRefused) {
  for (const char* path : {"/../outside.txt", "/%2e%2e/outside.txt", "/..%2Foutside.txt",
                           "/%2E%2E/%2E%2E/etc/passwd"}) {
    auto res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path;
    EXPECT_FALSE(absl::StrContains(res->body, "outside the web root")) << path;
    EXPECT_FALSE(absl::StrContains(res->body, "root:")) << path;
  }
}

TEST_F(ConsoleTest, ReadyWhenTheBackendsServe) {
  auto res = client_->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

TEST_F(ConsoleTest, NotReadyWithoutItsSchedulerButAlive) {
  auto orphan = StartConsole("console-orphan", absl::StrCat("127.0.0.1:", PickFreePort()));
  ASSERT_TRUE(orphan.ok()) << orphan.status();
  auto client = ClientOf(**orphan);
  auto res = client->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503) << res->body;
  EXPECT_TRUE(absl::StrContains(res->body, "scheduler")) << res->body;
  res = client->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  // And a call to it is unavailable, not a hang.
  res = client->Post(kListJobs, {{"Authorization", "Bearer " + stack_->admin_token()}}, "{}",
                     "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503) << res->body;
  EXPECT_EQ(ErrorCode(res->body), "unavailable") << res->body;
}

TEST_F(ConsoleTest, StopsCleanlyOnSigterm) {
  auto other = StartConsole("console-sigterm", stack_->scheduler());
  ASSERT_TRUE(other.ok()) << other.status();
  (*other)->proc->Signal(SIGTERM);
  int exit_code = -1;
  ASSERT_TRUE((*other)->proc->Wait(absl::Seconds(10), &exit_code).ok());
  EXPECT_EQ(exit_code, 0) << ReadFile((*other)->log);
  EXPECT_TRUE(absl::StrContains(ReadFile((*other)->log), "console stopped"));
}

TEST_F(ConsoleTest, TokensNeverReachTheLog) {
  // A console of its own, so that its first refusal from this client is logged (refusals are
  // logged once per client per 10 s; the suite's console has refused this client before).
  auto own = StartConsole("console-log", stack_->scheduler());
  ASSERT_TRUE(own.ok()) << own.status();
  client_ = ClientOf(**own);
  // A success, an authorization failure, a malformed header and a failing call, each with
  // a token the log must not show.
  ASSERT_TRUE(Post(kListJobs, "{}", stack_->admin_token()));
  const std::string caller_token = stack_->CallerToken("scheduler", "dispatcher");
  ASSERT_TRUE(Post(kListJobs, "{}", caller_token));
  ASSERT_TRUE(Post("/jobwheel.v1.DispatcherService/Dispatch", "{}", caller_token));
  const std::string odd_token = "odd-token-" + std::to_string(PickFreePort());
  ASSERT_TRUE(client_->Post(kListJobs, {{"Authorization", "Basic " + odd_token}}, "{}",
                            "application/json"));
  ASSERT_TRUE(Post(kCreateJob, JobJson("console-log-check", "bad cron"), stack_->admin_token()));
  const std::string log = ReadFile((*own)->log);
  // The calls were logged (so the check below looks at something): the success, and the
  // first refusal (the later ones within 10 s are counted, not written)...
  EXPECT_TRUE(absl::StrContains(log, "POST /jobwheel.v1.JobAdminService/ListJobs 200")) << log;
  EXPECT_TRUE(absl::StrContains(log, "POST /jobwheel.v1.JobAdminService/ListJobs 401")) << log;
  EXPECT_FALSE(absl::StrContains(log, "DispatcherService/Dispatch 404")) << log;
  // ...as JSON lines...
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(absl::StartsWith(line, "{\"time\":")) << line;
  }
  // ...and without any token.
  EXPECT_FALSE(absl::StrContains(log, stack_->admin_token()));
  EXPECT_FALSE(absl::StrContains(log, caller_token));
  EXPECT_FALSE(absl::StrContains(log, odd_token));
}

}  // namespace
}  // namespace jobwheel::console_testing
