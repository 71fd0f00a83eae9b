// Least privilege between components, with the real binaries: the scheduler and the
// dispatchers sign short-lived tokens with their own Ed25519 keys, each for one audience, and
// executors hold only public keys. So a process holding one app's executor token — which may
// register an executor of its own and be called by the dispatcher — obtains nothing that opens
// Dispatch, WatchExecutors, or another executor's Run/Kill/Log; Dispatch answers only the
// scheduler; and no file an executor is started with holds a private key.

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/auth/bearer.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "tests/security/demo_stack_suite.h"

namespace jobwheel::security_testing {

using testing::Addr;
using testing::Ctx;
using testing::ReadFile;
namespace {

int NextInstance() {
  static std::atomic<int> next{0};
  return next.fetch_add(1);
}

using testing::Eventually;

// An executor of the attacker's: records the `authorization` metadata of every call and runs
// nothing.
class RecordingExecutor final : public v1::ExecutorService::Service {
 public:
  grpc::Status Run(grpc::ServerContext* ctx, const v1::RunRequest*,
                   v1::RunResponse* resp) override {
    Record(ctx);
    resp->set_disposition(v1::RUN_DISPOSITION_REJECTED);
    return grpc::Status::OK;
  }
  grpc::Status RunBatch(grpc::ServerContext* ctx, const v1::RunBatchRequest* req,
                        v1::RunBatchResponse* resp) override {
    Record(ctx);
    for (int i = 0; i < req->runs_size(); ++i) {
      resp->add_responses()->set_disposition(v1::RUN_DISPOSITION_REJECTED);
    }
    return grpc::Status::OK;
  }
  grpc::Status Beat(grpc::ServerContext* ctx, const v1::BeatRequest*, v1::BeatResponse*) override {
    Record(ctx);
    return grpc::Status::OK;
  }
  grpc::Status IdleBeat(grpc::ServerContext* ctx, const v1::IdleBeatRequest*,
                        v1::IdleBeatResponse* resp) override {
    Record(ctx);
    resp->set_idle(true);
    return grpc::Status::OK;
  }

  std::vector<std::string> tokens() const {
    absl::MutexLock lock(&mu_);
    return tokens_;
  }

 private:
  void Record(grpc::ServerContext* ctx) {
    auto it = ctx->client_metadata().find("authorization");
    if (it == ctx->client_metadata().end()) return;
    absl::string_view value(it->second.data(), it->second.size());
    absl::ConsumePrefix(&value, "Bearer ");
    absl::MutexLock lock(&mu_);
    tokens_.emplace_back(value);
  }

  mutable absl::Mutex mu_;
  std::vector<std::string> tokens_ ABSL_GUARDED_BY(mu_);
};

bool Refused(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         s.error_code() == grpc::StatusCode::PERMISSION_DENIED;
}

class LeastPrivilegeTest : public DemoStackSuite {
 protected:
  // The calls an attacker would make with `token`; each status.
  static grpc::Status RunOnRealExecutor(const std::string& token, int64_t run_id) {
    auto exec = v1::ExecutorService::NewStub(stack_->Channel(stack_->executor()));
    v1::RunRequest run;
    run.set_run_id(run_id);
    run.set_job_id(run_id);
    run.set_handler("echo");
    run.set_param("must never run");
    v1::RunResponse resp;
    return exec->Run(Ctx(token).get(), run, &resp);
  }
  static grpc::Status KillOnRealExecutor(const std::string& token) {
    auto exec = v1::ExecutorService::NewStub(stack_->Channel(stack_->executor()));
    v1::KillRequest kill;
    kill.set_run_id(1);
    v1::KillResponse resp;
    return exec->Kill(Ctx(token).get(), kill, &resp);
  }
  static grpc::Status LogOnRealExecutor(const std::string& token) {
    auto exec = v1::ExecutorService::NewStub(stack_->Channel(stack_->executor()));
    v1::LogRequest log;
    log.set_run_id(1);
    v1::LogResponse resp;
    return exec->Log(Ctx(token).get(), log, &resp);
  }
  static grpc::Status Dispatch(const std::string& token, int64_t job_id) {
    auto stub = v1::DispatcherService::NewStub(stack_->Channel(stack_->dispatcher()));
    v1::DispatchRequest req;
    if (job_id > 0) {
      v1::Fire* f = req.add_fires();
      f->set_fire_id(int64_t{1} << 40);
      f->mutable_job()->set_id(job_id);
      f->mutable_job()->set_app("demo");
      f->mutable_job()->set_handler("echo");
      f->set_param("must never run");
    }
    v1::DispatchResponse resp;
    return stub->Dispatch(Ctx(token).get(), req, &resp);
  }
  static grpc::Status Watch(const std::string& token) {
    auto stub = v1::RegistryService::NewStub(stack_->Channel(stack_->registry()));
    auto ctx = Ctx(token);
    auto reader = stub->WatchExecutors(ctx.get(), v1::WatchExecutorsRequest());
    v1::WatchExecutorsResponse event;
    if (reader->Read(&event)) {
      ctx->TryCancel();
      while (reader->Read(&event)) {
      }
      (void)reader->Finish();
      return grpc::Status::OK;
    }
    return reader->Finish();
  }

  // Creates an enabled echo job of demo with `routing` and returns its id.
  static int64_t CreateJob(const std::string& name, v1::RoutingStrategy routing) {
    auto jobs = v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
    v1::CreateJobRequest create;
    v1::Job* job = create.mutable_job();
    job->set_app("demo");
    job->set_name(name);
    job->set_handler("echo");
    job->set_routing_strategy(routing);
    job->mutable_schedule()->mutable_none();
    job->set_enabled(true);
    v1::CreateJobResponse created;
    grpc::Status s = jobs->CreateJob(Ctx(stack_->admin_token()).get(), create, &created);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return created.job().id();
  }
  static int RunsOf(int64_t job_id) {
    auto jobs = v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
    v1::ListRunsRequest req;
    req.set_job_id(job_id);
    v1::ListRunsResponse runs;
    EXPECT_TRUE(jobs->ListRuns(Ctx(stack_->admin_token()).get(), req, &runs).ok());
    return runs.runs_size();
  }
};

TEST_F(LeastPrivilegeTest, WhatAFakeExecutorCapturesOpensNothingElse) {
  // The attacker: this process, with demo's executor token, serving ExecutorService on an
  // address of its own and registering it for demo.
  RecordingExecutor fake;
  int port = 0;
  auto server = StartGrpcServer("127.0.0.1:0", {&fake}, {}, &port);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string fake_address = Addr(port);

  auto registry = v1::RegistryService::NewStub(stack_->Channel(stack_->registry()));
  grpc::ClientContext hb_ctx;
  AddBearer(hb_ctx, *executor_token_);
  auto stream = registry->Heartbeat(&hb_ctx);
  v1::HeartbeatRequest reg;
  reg.mutable_register_()->set_app("demo");
  reg.mutable_register_()->set_address(fake_address);
  // A process of its own: a fresh instance id (a reconnect would keep its id).
  reg.mutable_register_()->set_instance_id(
      absl::StrCat("security-test-", getpid(), "-", NextInstance()));
  reg.mutable_register_()->add_handlers("echo");
  ASSERT_TRUE(stream->Write(reg));
  v1::HeartbeatResponse registered;
  const bool accepted = stream->Read(&registered) && registered.has_registered();
  std::thread beats;
  std::atomic<bool> stop{false};
  std::vector<std::string> captured;
  if (accepted) {
    // Keep it online, and have the dispatcher call it: a broadcast job reaches every executor.
    beats = std::thread([&] {
      v1::HeartbeatRequest beat;
      v1::HeartbeatResponse ack;
      for (int64_t seq = 1; !stop; ++seq) {
        beat.mutable_beat()->set_seq(seq);
        if (!stream->Write(beat) || !stream->Read(&ack)) return;
        absl::SleepFor(absl::Milliseconds(300));
      }
    });
    const int64_t job = CreateJob("broadcast-to-the-fake", v1::ROUTING_STRATEGY_SHARDING_BROADCAST);
    auto jobs = v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
    EXPECT_TRUE(Eventually(
        [&] {
          v1::TriggerJobRequest trigger;
          trigger.set_id(job);
          v1::TriggerJobResponse triggered;
          (void)jobs->TriggerJob(Ctx(stack_->admin_token()).get(), trigger, &triggered);
          return Eventually([&] { return !fake.tokens().empty(); }, absl::Seconds(3));
        },
        absl::Seconds(30)))
        << "the dispatcher never called the registered fake executor";
    captured = fake.tokens();
  } else {
    // The registry refused the fake's address: the attacker gets at most what a dispatcher
    // would have sent it, a token for the fake's own address.
    std::cerr << "registration refused: " << stream->Finish().error_message() << "\n";
    captured = {stack_->ExecutorCallerToken("dispatcher", "demo", fake_address)};
  }
  ASSERT_FALSE(captured.empty());

  // What it captured is a dispatcher token for the fake's own address, nothing reusable.
  const std::string token = captured.front();
  std::vector<std::string> parts = absl::StrSplit(token, '.');
  ASSERT_EQ(parts.size(), 3u) << "not a caller token";
  EXPECT_EQ(parts[0], "jwc1");
  std::string payload;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(parts[1], &payload));
  EXPECT_TRUE(absl::StrContains(payload, R"("iss":"dispatcher")")) << payload;
  // Bound to the app and the address: worthless at another app's executor at that address.
  EXPECT_TRUE(absl::StrContains(payload, absl::StrCat(R"("aud":"demo@)", fake_address, R"(")")))
      << payload;

  const int64_t victim_job = CreateJob("never-dispatched", v1::ROUTING_STRATEGY_FIRST);
  for (const auto& [who, credential] : std::vector<std::pair<std::string, std::string>>{
           {"the captured dispatcher token", token}, {"demo's executor token", *executor_token_}}) {
    SCOPED_TRACE(who);
    grpc::Status s = RunOnRealExecutor(credential, 990001);
    EXPECT_TRUE(Refused(s)) << s.error_code() << " " << s.error_message();
    s = KillOnRealExecutor(credential);
    EXPECT_TRUE(Refused(s)) << s.error_code() << " " << s.error_message();
    s = LogOnRealExecutor(credential);
    EXPECT_TRUE(Refused(s)) << s.error_code() << " " << s.error_message();
    s = Dispatch(credential, victim_job);
    EXPECT_TRUE(Refused(s)) << s.error_code() << " " << s.error_message();
    s = Watch(credential);
    EXPECT_TRUE(Refused(s)) << s.error_code() << " " << s.error_message();
  }

  // Nothing ran: no execution of the forged run on the real executor, no run of the job.
  for (const testing::Execution& e : stack_->Executions(0)) {
    EXPECT_NE(e.run_id, 990001);
    EXPECT_NE(e.job_id, victim_job);
  }
  EXPECT_EQ(RunsOf(victim_job), 0);

  stop = true;
  hb_ctx.TryCancel();
  if (beats.joinable()) beats.join();
  (*server)->Shutdown();
}

TEST_F(LeastPrivilegeTest, DispatchAnswersOnlyTheScheduler) {
  const int64_t job = CreateJob("dispatch-victim", v1::ROUTING_STRATEGY_FIRST);
  auto api_admin = stack_->CreateToken("api-admin", v1::ROLE_ADMIN, {});
  ASSERT_TRUE(api_admin.ok()) << api_admin.status();
  for (const auto& [who, token] : std::vector<std::pair<std::string, std::string>>{
           {"no token", ""},
           {"an executor token", *executor_token_},
           {"the bootstrap admin token", stack_->admin_token()},
           {"an ADMIN API token", *api_admin},
           {"a dispatcher-signed token", stack_->CallerToken("dispatcher", "dispatcher")},
           {"a scheduler token for an executor",
            stack_->ExecutorCallerToken("scheduler", "demo", stack_->executor())},
           {"a scheduler token for the registry", stack_->CallerToken("scheduler", "registry")}}) {
    SCOPED_TRACE(who);
    grpc::Status s = Dispatch(token, job);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  }
  EXPECT_EQ(RunsOf(job), 0);
  // The scheduler's own token for the dispatcher works.
  grpc::Status s = Dispatch(stack_->CallerToken("scheduler", "dispatcher"), 0);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(LeastPrivilegeTest, ExecutorsAreStartedWithPublicKeysOnly) {
  // Every file the demo executor was given on its command line.
  std::ifstream cmdline(absl::StrCat("/proc/", stack_->executor_process(0).pid(), "/cmdline"));
  std::stringstream ss;
  ss << cmdline.rdbuf();
  std::vector<std::pair<std::string, std::string>> files;  // Flag, path.
  for (absl::string_view arg : absl::StrSplit(ss.str(), '\0')) {
    const size_t eq = arg.find('=');
    if (absl::StartsWith(arg, "--") && eq != absl::string_view::npos &&
        absl::EndsWith(arg.substr(0, eq), "_file")) {
      files.emplace_back(std::string(arg.substr(2, eq - 2)), std::string(arg.substr(eq + 1)));
    }
  }
  int keys = 0;
  for (const auto& [flag, path] : files) keys += absl::EndsWith(flag, "public_key_file");
  ASSERT_EQ(keys, 2) << ss.str();
  const std::string scheduler_key = ReadFile(stack_->caller_keys().scheduler_key);
  const std::string dispatcher_key = ReadFile(stack_->caller_keys().dispatcher_key);
  ASSERT_TRUE(absl::StrContains(scheduler_key, "PRIVATE KEY"));
  for (const auto& [flag, path] : files) {
    SCOPED_TRACE(flag);
    const std::string content = ReadFile(path);
    EXPECT_FALSE(absl::StrContains(content, "PRIVATE KEY"));
    EXPECT_NE(content, scheduler_key);
    EXPECT_NE(content, dispatcher_key);
    if (!absl::EndsWith(flag, "token_file")) continue;
    // No token it holds opens an internal RPC (its token registers and reports, nothing else).
    std::string bearer(absl::StripAsciiWhitespace(content));
    EXPECT_TRUE(Refused(Dispatch(bearer, 0)));
    EXPECT_TRUE(Refused(Watch(bearer)));
    EXPECT_TRUE(Refused(RunOnRealExecutor(bearer, 990002)));
  }
}

}  // namespace
}  // namespace jobwheel::security_testing
