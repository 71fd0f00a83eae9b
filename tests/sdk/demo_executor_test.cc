// The demo executor binary against in-process fake registry and dispatcher: the wire
// contract (registration, Run/Kill/IdleBeat/Log, results), auth, SIGTERM shutdown with
// goodbye, and results surviving a restart while the dispatcher is down.

#include <signal.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/auth/bearer.h"
#include "common/model/instance_tag.h"
#include "common/testing/caller_keys.h"
#include "common/testing/process.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "sdk/testing/fake_dispatcher.h"
#include "sdk/testing/fake_registry.h"

namespace jobwheel {
namespace {

using ::jobwheel::sdk::testing::FakeDispatcher;
using ::jobwheel::sdk::testing::FakeRegistry;
using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::Process;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kExecutorToken[] = "exec-token-123";

std::string WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path) << content << "\n";
  return path;
}

class DemoExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = jobwheel::testing::TestTempDir("demo_executor_test");
    auto reg = registry_.Start();
    ASSERT_TRUE(reg.ok()) << reg.status();
    registry_address_ = *reg;
    auto disp = dispatcher_.Start();
    ASSERT_TRUE(disp.ok()) << disp.status();
    dispatcher_address_ = *disp;
    port_ = jobwheel::testing::PickFreePort();
    address_ = absl::StrCat("127.0.0.1:", port_);
    WriteFile(dir_ + "/executor.token", kExecutorToken);
    auto keys = jobwheel::testing::WriteCallerKeys(dir_);
    ASSERT_TRUE(keys.ok()) << keys.status();
    keys_ = *keys;
  }

  void StartExecutor(const std::vector<std::string>& extra = {}) {
    executor_ = std::make_unique<Process>();
    std::vector<std::string> args = {
        "--listen=" + address_,
        "--app=demo",
        "--registry_target=" + registry_address_,
        "--dispatcher_target=" + dispatcher_address_,
        "--metrics_address=",
        "--log_dir=" + dir_ + "/logs",
        "--spool_dir=" + dir_ + "/spool",
        "--executor_token_file=" + dir_ + "/executor.token",
        "--dispatcher_public_key_file=" + keys_.dispatcher_pub,
        "--scheduler_public_key_file=" + keys_.scheduler_pub,
        "--grace_period=2s",
    };
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_TRUE(executor_
                    ->Start(jobwheel::testing::RunfilePath("sdk/examples/demo_executor"), args,
                            dir_ + "/executor.log")
                    .ok());
    ASSERT_TRUE(jobwheel::testing::WaitForServing(address_, absl::Seconds(20)).ok());
    stub_ = jobwheel::v1::ExecutorService::NewStub(
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }

  grpc::Status Run(const jobwheel::v1::RunRequest& req, jobwheel::v1::RunResponse* resp,
                   const std::string& token = "") {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    AddBearer(ctx, token.empty() ? CallerToken("dispatcher") : token);
    return stub_->Run(&ctx, req, resp);
  }

  // A token the scheduler or a dispatcher signed for this executor's address.
  std::string CallerToken(absl::string_view issuer) const {
    auto token = jobwheel::testing::SignCallerToken(
        issuer == "scheduler" ? keys_.scheduler_key : keys_.dispatcher_key, issuer,
        "demo@" + address_);
    return token.ok() ? *token : std::string();
  }

  jobwheel::v1::RunRequest Request(int64_t run_id, int64_t job_id, const std::string& handler,
                                   const std::string& param) {
    jobwheel::v1::RunRequest req;
    req.set_app("demo");
    // The executor's process, as the registry lists it (its registration's instance id).
    EXPECT_TRUE(Eventually([&] { return !registry_.registrations().empty(); }, absl::Seconds(10)));
    const auto regs = registry_.registrations();
    if (!regs.empty()) req.set_executor_instance(InstanceTag(regs.back().instance_id()));
    req.set_run_id(run_id);
    req.set_job_id(job_id);
    req.set_fire_id(run_id * 10);
    req.set_handler(handler);
    req.set_param(param);
    req.set_trigger_type(jobwheel::v1::TRIGGER_TYPE_MANUAL);
    return req;
  }

  std::string ExecutorLog() {
    std::ifstream in(dir_ + "/executor.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::string dir_;
  FakeRegistry registry_{kExecutorToken};
  FakeDispatcher dispatcher_{kExecutorToken};
  std::string registry_address_;
  std::string dispatcher_address_;
  int port_ = 0;
  std::string address_;
  jobwheel::testing::CallerKeyFiles keys_;
  std::unique_ptr<Process> executor_;
  std::unique_ptr<jobwheel::v1::ExecutorService::Stub> stub_;
};

TEST_F(DemoExecutorTest, RegistersRunsReportsAndShutsDownWithGoodbye) {
  StartExecutor();
  ASSERT_TRUE(Eventually([&] { return !registry_.registrations().empty(); }, absl::Seconds(10)));
  const jobwheel::v1::ExecutorRegistration reg = registry_.registrations()[0];
  EXPECT_EQ(reg.app(), "demo");
  EXPECT_EQ(reg.address(), address_);
  EXPECT_EQ(reg.sdk_version(), "0.1.0");
  EXPECT_FALSE(reg.allow_scripts());
  EXPECT_THAT(reg.handlers(), ElementsAre("echo", "fail", "flaky", "shard", "sleep"));
  ASSERT_TRUE(Eventually([&] { return registry_.beats().size() >= 2; }, absl::Seconds(10)));

  // Without a caller token for this executor: refused.
  jobwheel::v1::RunResponse resp;
  grpc::Status st = Run(Request(1, 1, "echo", "x"), &resp, "wrong");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);

  // echo: started, result delivered to the dispatcher with the executor's address.
  ASSERT_TRUE(Run(Request(101, 1, "echo", "hello world"), &resp).ok());
  EXPECT_EQ(resp.disposition(), jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(Eventually([&] { return dispatcher_.Has(101); }, absl::Seconds(10)));
  jobwheel::v1::RunResult r = dispatcher_.Get(101);
  EXPECT_EQ(r.status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(r.code(), 200);
  EXPECT_EQ(r.message(), "hello world");
  EXPECT_EQ(r.executor_address(), address_);
  EXPECT_TRUE(r.has_start_time());
  EXPECT_TRUE(r.has_end_time());

  // Its log, through the Log RPC.
  {
    grpc::ClientContext ctx;
    AddBearer(ctx, CallerToken("scheduler"));
    jobwheel::v1::LogRequest lreq;
    lreq.set_run_id(101);
    jobwheel::v1::LogResponse lresp;
    ASSERT_TRUE(stub_->Log(&ctx, lreq, &lresp).ok());
    EXPECT_TRUE(lresp.end());
    EXPECT_EQ(lresp.from_line(), 1);
    EXPECT_EQ(lresp.to_line(), lresp.lines_size());
    EXPECT_THAT(absl::StrJoin(lresp.lines(), "\n"), HasSubstr("hello world"));
  }

  // Unknown handler: rejected.
  ASSERT_TRUE(Run(Request(102, 2, "nope", ""), &resp).ok());
  EXPECT_EQ(resp.disposition(), jobwheel::v1::RUN_DISPOSITION_REJECTED);

  // Timeout: sleep 60 s with a 300 ms timeout ends TIMED_OUT.
  jobwheel::v1::RunRequest slow = Request(103, 3, "sleep", "60000");
  *slow.mutable_timeout() = ToProtoDuration(absl::Milliseconds(300));
  ASSERT_TRUE(Run(slow, &resp).ok());
  ASSERT_TRUE(Eventually([&] { return dispatcher_.Has(103); }, absl::Seconds(10)));
  EXPECT_EQ(dispatcher_.Get(103).status(), jobwheel::v1::RUN_STATUS_TIMED_OUT);

  // Kill: a running sleep ends KILLED; IdleBeat sees it running before.
  ASSERT_TRUE(Run(Request(104, 4, "sleep", "60000"), &resp).ok());
  {
    grpc::ClientContext ctx;
    AddBearer(ctx, CallerToken("dispatcher"));
    jobwheel::v1::IdleBeatRequest ireq;
    ireq.set_job_id(4);
    jobwheel::v1::IdleBeatResponse iresp;
    ASSERT_TRUE(stub_->IdleBeat(&ctx, ireq, &iresp).ok());
    EXPECT_FALSE(iresp.idle());
    EXPECT_EQ(iresp.running() + iresp.queued(), 1);
  }
  {
    grpc::ClientContext ctx;
    AddBearer(ctx, CallerToken("scheduler"));
    jobwheel::v1::KillRequest kreq;
    kreq.set_run_id(104);
    kreq.set_reason("operator");
    jobwheel::v1::KillResponse kresp;
    ASSERT_TRUE(stub_->Kill(&ctx, kreq, &kresp).ok());
    EXPECT_TRUE(kresp.killed());
  }
  ASSERT_TRUE(Eventually([&] { return dispatcher_.Has(104); }, absl::Seconds(10)));
  EXPECT_EQ(dispatcher_.Get(104).status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_THAT(dispatcher_.Get(104).message(), HasSubstr("operator"));

  // flaky and shard see attempt and shard fields.
  jobwheel::v1::RunRequest flaky = Request(105, 5, "flaky", "2");
  flaky.set_attempt(2);
  ASSERT_TRUE(Run(flaky, &resp).ok());
  jobwheel::v1::RunRequest shard = Request(106, 6, "shard", "");
  shard.set_shard_index(1);
  shard.set_shard_total(3);
  ASSERT_TRUE(Run(shard, &resp).ok());
  ASSERT_TRUE(Run(Request(107, 7, "fail", ""), &resp).ok());
  ASSERT_TRUE(Eventually(
      [&] { return dispatcher_.Has(105) && dispatcher_.Has(106) && dispatcher_.Has(107); },
      absl::Seconds(10)));
  EXPECT_EQ(dispatcher_.Get(105).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(dispatcher_.Get(106).message(), "shard 1/3");
  EXPECT_EQ(dispatcher_.Get(107).status(), jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_EQ(dispatcher_.Get(107).code(), 500);

  // SIGTERM: goodbye reaches the registry and the process exits 0.
  executor_->Signal(SIGTERM);
  int code = -1;
  ASSERT_TRUE(executor_->Wait(absl::Seconds(20), &code).ok());
  EXPECT_EQ(code, 0) << ExecutorLog();
  EXPECT_EQ(registry_.goodbyes().size(), 1u);
  EXPECT_EQ(registry_.open_streams(), 0);
}

TEST_F(DemoExecutorTest, ResultsSurviveRestartWhileDispatcherIsDown) {
  dispatcher_.SetDown(true);
  StartExecutor();
  jobwheel::v1::RunResponse resp;
  ASSERT_TRUE(Run(Request(201, 1, "echo", "a"), &resp).ok());
  ASSERT_TRUE(Run(Request(202, 2, "fail", ""), &resp).ok());
  // Both ended and were offered (and refused).
  ASSERT_TRUE(Eventually([&] { return dispatcher_.calls() >= 2; }, absl::Seconds(10)));
  executor_->Signal(SIGTERM);
  ASSERT_TRUE(executor_->Wait(absl::Seconds(20)).ok());
  EXPECT_TRUE(dispatcher_.results().empty());

  dispatcher_.SetDown(false);
  StartExecutor();
  ASSERT_TRUE(
      Eventually([&] { return dispatcher_.Has(201) && dispatcher_.Has(202); }, absl::Seconds(10)))
      << ExecutorLog();
  EXPECT_EQ(dispatcher_.Get(201).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(dispatcher_.Get(202).status(), jobwheel::v1::RUN_STATUS_FAILED);
  executor_->Signal(SIGTERM);
  ASSERT_TRUE(executor_->Wait(absl::Seconds(20)).ok());
}

TEST_F(DemoExecutorTest, RefusesToStartWithoutTokens) {
  Process p;
  ASSERT_TRUE(p.Start(jobwheel::testing::RunfilePath("sdk/examples/demo_executor"),
                      {"--listen=" + address_, "--metrics_address=", "--log_dir=" + dir_ + "/l2",
                       "--spool_dir=" + dir_ + "/s2"},
                      dir_ + "/notoken.log")
                  .ok());
  int code = 0;
  ASSERT_TRUE(p.Wait(absl::Seconds(20), &code).ok());
  EXPECT_NE(code, 0);
  std::ifstream in(dir_ + "/notoken.log");
  std::string log((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(log, HasSubstr("insecure_dev"));
}

}  // namespace
}  // namespace jobwheel
