#include "jobwheel/executor.h"

#include <unistd.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/model/instance_tag.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "prometheus/registry.h"
#include "sdk/testing/fake_dispatcher.h"
#include "sdk/testing/fake_registry.h"

namespace jobwheel {
namespace {

using ::jobwheel::sdk::testing::FakeDispatcher;
using ::jobwheel::sdk::testing::FakeRegistry;
using ::jobwheel::testing::Eventually;
using ::testing::HasSubstr;

constexpr char kExecutorToken[] = "exec";
constexpr absl::Duration kWait = absl::Seconds(10);

// A run as a dispatcher sends it: for this executor's app and instance, with a token for
// "app@address" (each overridable, to send what an attacker would).
struct RunTarget {
  std::string app = "billing";
  std::string instance;  // Empty: the executor's own.
  std::string audience;  // Empty: "billing@<address>".
};

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = jobwheel::testing::TestTempDir(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto r = registry_.Start();
    ASSERT_TRUE(r.ok());
    auto d = dispatcher_.Start();
    ASSERT_TRUE(d.ok());
    options_.app = "billing";
    options_.listen_address = "127.0.0.1:0";
    options_.registry_target = *r;
    options_.dispatcher_target = *d;
    options_.executor_token = kExecutorToken;
    options_.dispatcher_public_keys = dispatcher_keys_.public_pem;
    options_.scheduler_public_keys = scheduler_keys_.public_pem;
    options_.log_dir = dir_ + "/logs";
    options_.spool_dir = dir_ + "/spool";
    options_.handle_signals = false;
    options_.grace_period = absl::Seconds(5);
  }

  grpc::Status Run(Executor& exec, int64_t run_id, int64_t job_id, const std::string& handler,
                   const std::string& param, jobwheel::v1::RunResponse* resp,
                   RunTarget target = RunTarget()) {
    auto stub = jobwheel::v1::ExecutorService::NewStub(
        grpc::CreateChannel(exec.advertise_address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    AddBearer(ctx, DispatcherToken(target.audience.empty() ? "billing@" + exec.advertise_address()
                                                           : target.audience));
    jobwheel::v1::RunRequest req;
    req.set_app(target.app);
    req.set_executor_instance(target.instance.empty() ? exec.instance() : target.instance);
    req.set_run_id(run_id);
    req.set_job_id(job_id);
    req.set_handler(handler);
    req.set_param(param);
    return stub->Run(&ctx, req, resp);
  }

  // What a dispatcher presents for `audience` ("app@address").
  std::string DispatcherToken(const std::string& audience) {
    auto signer = CallerTokenSigner::Create(dispatcher_keys_.private_pem,
                                            {std::string(kIssuerDispatcher)}, RealClock::Get());
    return *(*signer)->TokenFor(audience);
  }

  const CallerKeyPair dispatcher_keys_ = *GenerateCallerKeyPair();
  const CallerKeyPair scheduler_keys_ = *GenerateCallerKeyPair();
  std::string dir_;
  FakeRegistry registry_{kExecutorToken, absl::Milliseconds(50)};
  FakeDispatcher dispatcher_{kExecutorToken};
  ExecutorOptions options_;
};

TEST_F(ExecutorTest, BadRegistrationsAndOptionsFailStart) {
  {
    Executor exec(options_);
    EXPECT_FALSE(exec.Register("", [](JobContext&) { return Result::Ok(); }).ok());
    EXPECT_TRUE(exec.Register("a", [](JobContext&) { return Result::Ok(); }).ok());
    EXPECT_FALSE(exec.Register("a", [](JobContext&) { return Result::Ok(); }).ok());
    EXPECT_FALSE(exec.Register("b", nullptr).ok());
    absl::Status st = exec.Start();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  }
  {
    ExecutorOptions o = options_;
    o.scheduler_public_keys.clear();
    Executor exec(o);
    absl::Status st = exec.Start();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(st.message()), HasSubstr("scheduler_public_keys"));
  }
  for (const std::string& user : {"", "root", "0"}) {
    ExecutorOptions o = options_;
    o.allow_scripts = true;
    o.script_user = user;
    Executor exec(o);
    absl::Status st = exec.Start();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << user;
    EXPECT_THAT(std::string(st.message()), HasSubstr("script_user")) << user;
  }
  if (::geteuid() == 0) {
    ExecutorOptions o = options_;
    o.allow_scripts = true;
    o.script_user = "no-such-user-here";
    Executor exec(o);
    absl::Status st = exec.Start();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(st.message()), HasSubstr("script_user"));
  }
  {
    ExecutorOptions o = options_;
    o.allow_scripts = true;
    o.script_hidden_paths = {"/"};
    Executor exec(o);
    EXPECT_EQ(exec.Start().code(), absl::StatusCode::kInvalidArgument);
  }
  {
    ExecutorOptions o = options_;
    o.dispatcher_public_keys = "not a key";
    Executor exec(o);
    EXPECT_EQ(exec.Start().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST_F(ExecutorTest, EndToEndWithGracefulShutdown) {
  auto metrics = std::make_shared<prometheus::Registry>();
  options_.metrics_registry = metrics;
  Executor exec(options_);
  ASSERT_TRUE(exec.Register("greet",
                            [](JobContext& ctx) {
                              ctx.Log("hello " + ctx.param());
                              return Result::Ok("greeted " + ctx.param());
                            })
                  .ok());
  ASSERT_TRUE(exec.Register("slow",
                            [](JobContext& ctx) {
                              ctx.SleepFor(absl::Milliseconds(300));
                              return Result::Ok("slow done");
                            })
                  .ok());
  ASSERT_TRUE(exec.Start().ok());
  EXPECT_FALSE(exec.Register("late", [](JobContext&) { return Result::Ok(); }).ok());
  ASSERT_GT(exec.port(), 0);
  EXPECT_EQ(exec.advertise_address(), absl::StrCat("127.0.0.1:", exec.port()));
  ASSERT_TRUE(Eventually([&] { return !registry_.registrations().empty(); }, kWait));
  EXPECT_EQ(registry_.registrations()[0].address(), exec.advertise_address());
  EXPECT_EQ(registry_.registrations()[0].app(), "billing");

  jobwheel::v1::RunResponse resp;
  ASSERT_TRUE(Run(exec, 1, 1, "greet", "bob", &resp).ok());
  ASSERT_TRUE(Eventually([&] { return dispatcher_.Has(1); }, kWait));
  EXPECT_EQ(dispatcher_.Get(1).message(), "greeted bob");

  // In flight at shutdown, finishes within the grace period.
  ASSERT_TRUE(Run(exec, 2, 2, "slow", "", &resp).ok());
  ASSERT_EQ(resp.disposition(), jobwheel::v1::RUN_DISPOSITION_STARTED);
  exec.Shutdown();
  EXPECT_EQ(registry_.goodbyes().size(), 1u);
  ASSERT_TRUE(dispatcher_.Has(2));  // Flushed before Shutdown returned.
  EXPECT_EQ(dispatcher_.Get(2).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  exec.Shutdown();  // Idempotent.

  std::set<std::string> names;
  for (const auto& family : metrics->Collect()) names.insert(family.name);
  for (const char* name :
       {"jobwheel_executor_runs_total", "jobwheel_executor_run_duration_seconds",
        "jobwheel_executor_queue_depth", "jobwheel_executor_running",
        "jobwheel_executor_spool_size", "jobwheel_executor_heartbeat_connected"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
}

TEST_F(ExecutorTest, RefusesRunsForAnotherAppOrInstanceAndTokensForAnotherApp) {
  std::atomic<int> ran{0};
  Executor exec(options_);
  ASSERT_TRUE(exec.Register("greet",
                            [&](JobContext&) {
                              ++ran;
                              return Result::Ok();
                            })
                  .ok());
  ASSERT_TRUE(exec.Start().ok());
  ASSERT_TRUE(Eventually([&] { return !registry_.registrations().empty(); }, kWait));
  // The registry gets the instance id; runs name its public tag.
  EXPECT_EQ(exec.instance(), InstanceTag(registry_.registrations()[0].instance_id()));
  EXPECT_EQ(exec.instance().size(), 32u);

  jobwheel::v1::RunResponse resp;
  // A run of app demo (sent here because demo registered this address): refused, not recorded.
  ASSERT_TRUE(Run(exec, 1, 1, "greet", "", &resp, RunTarget{"demo", "", ""}).ok());
  EXPECT_EQ(resp.disposition(), jobwheel::v1::RUN_DISPOSITION_REJECTED);
  EXPECT_THAT(resp.message(), HasSubstr("run is for app \"demo\""));
  // A run meant for the process this one replaced at the address.
  ASSERT_TRUE(Run(exec, 2, 2, "greet", "", &resp,
                  RunTarget{"billing", "0123456789abcdef0123456789abcdef", ""})
                  .ok());
  EXPECT_EQ(resp.disposition(), jobwheel::v1::RUN_DISPOSITION_REJECTED);
  EXPECT_THAT(resp.message(), HasSubstr("another process at this address"));
  // A dispatcher token made for demo's executor at this address, or for the bare address.
  for (const std::string& audience :
       {"demo@" + exec.advertise_address(), exec.advertise_address()}) {
    grpc::Status s = Run(exec, 3, 3, "greet", "", &resp, RunTarget{"billing", "", audience});
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << audience;
  }
  // Run 1 was not recorded as refused: sent properly it runs.
  ASSERT_TRUE(Run(exec, 1, 1, "greet", "", &resp).ok());
  EXPECT_EQ(resp.disposition(), jobwheel::v1::RUN_DISPOSITION_STARTED) << resp.message();
  ASSERT_TRUE(Eventually([&] { return dispatcher_.Has(1); }, kWait));
  EXPECT_EQ(ran.load(), 1);
  exec.Shutdown();
}

TEST_F(ExecutorTest, RunBlocksUntilShutdownAndFailsRunsBeyondGrace) {
  options_.grace_period = absl::Milliseconds(100);
  Executor exec(options_);
  ASSERT_TRUE(exec.Register("forever",
                            [](JobContext& ctx) {
                              ctx.SleepFor(absl::Hours(1));
                              return Result::Ok();
                            })
                  .ok());
  absl::Notification returned;
  std::thread runner([&] {
    EXPECT_TRUE(exec.Run().ok());
    returned.Notify();
  });
  ASSERT_TRUE(Eventually([&] { return exec.port() > 0; }, kWait));
  ASSERT_TRUE(Eventually([&] { return !registry_.registrations().empty(); }, kWait));
  jobwheel::v1::RunResponse resp;
  ASSERT_TRUE(Run(exec, 7, 7, "forever", "", &resp).ok());
  EXPECT_FALSE(returned.HasBeenNotified());
  exec.Shutdown();
  ASSERT_TRUE(returned.WaitForNotificationWithTimeout(kWait));
  runner.join();
  ASSERT_TRUE(dispatcher_.Has(7));
  EXPECT_EQ(dispatcher_.Get(7).status(), jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_EQ(dispatcher_.Get(7).message(), "executor shut down");
}

TEST_F(ExecutorTest, RejectsRunsWhileShuttingDown) {
  options_.grace_period = absl::Seconds(2);
  Executor exec(options_);
  absl::Notification started;
  ASSERT_TRUE(exec.Register("hold",
                            [&](JobContext& ctx) {
                              started.Notify();
                              ctx.SleepFor(absl::Milliseconds(800));
                              return Result::Ok();
                            })
                  .ok());
  ASSERT_TRUE(exec.Register("echo", [](JobContext&) { return Result::Ok(); }).ok());
  ASSERT_TRUE(exec.Start().ok());
  jobwheel::v1::RunResponse resp;
  ASSERT_TRUE(Run(exec, 1, 1, "hold", "", &resp).ok());
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(kWait));
  std::thread stopper([&] { exec.Shutdown(); });
  // While the held run finishes, the server is still up but refuses new runs. (A run sent
  // before the shutdown began is accepted and runs: each attempt uses a new run id.)
  int64_t refused = 0;
  int64_t next_id = 100;
  ASSERT_TRUE(Eventually(
      [&] {
        jobwheel::v1::RunResponse r;
        const int64_t id = next_id++;
        if (Run(exec, id, 2, "echo", "", &r).ok() &&
            r.disposition() == jobwheel::v1::RUN_DISPOSITION_REJECTED &&
            r.message() == "shutting down") {
          refused = id;
          return true;
        }
        return false;
      },
      kWait));
  stopper.join();
  EXPECT_EQ(dispatcher_.Get(1).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_FALSE(dispatcher_.Has(refused));
}

}  // namespace
}  // namespace jobwheel
