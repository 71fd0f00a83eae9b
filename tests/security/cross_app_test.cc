// The cross-app execution attack, against the real binaries: with only app demo's executor
// token, an attacker on the same host as billing's executor registers billing's address for
// demo, so that demo's runs (and their params) would go to billing's executor. The registry
// refuses the registration, and billing's executor refuses any run or caller token that is not
// for billing, so nothing runs there.

#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/testing/client_context.h"
#include "common/testing/stack.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "tests/security/demo_stack_suite.h"

namespace jobwheel::security_testing {
namespace {

namespace v1 = ::jobwheel::v1;

using ::jobwheel::testing::Ctx;

class CrossAppTest : public DemoStackSuite {
 protected:
  void SetUp() override {
    DemoStackSuite::SetUp();
    if (billing_ >= 0) return;
    auto token = stack_->CreateToken("exec-billing", v1::ROLE_EXECUTOR, {"billing"});
    ASSERT_TRUE(token.ok()) << token.status();
    Stack::ExecutorSpec spec;
    spec.app = "billing";
    spec.token = *token;
    auto index = stack_->AddExecutor(spec);
    ASSERT_TRUE(index.ok()) << index.status() << "\n" << stack_->Logs();
    billing_ = *index;
  }

  std::string billing() const { return stack_->executor(billing_); }

  static inline int billing_ = -1;
};

TEST_F(CrossAppTest, AnotherAppsOnlineAddressCannotBeRegistered) {
  auto registry = v1::RegistryService::NewStub(stack_->Channel(stack_->registry()));
  auto ctx = Ctx(*executor_token_);  // demo's executor token.
  auto stream = registry->Heartbeat(ctx.get());
  v1::HeartbeatRequest reg;
  reg.mutable_register_()->set_app("demo");
  reg.mutable_register_()->set_address(billing());  // Same host as the caller, billing's port.
  reg.mutable_register_()->set_instance_id(absl::StrCat("cross-app-attacker-", getpid(), "-x"));
  reg.mutable_register_()->add_handlers("echo");
  ASSERT_TRUE(stream->Write(reg));
  v1::HeartbeatResponse resp;
  EXPECT_FALSE(stream->Read(&resp) && resp.has_registered());
  grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "is online for another app (billing)"))
      << s.error_message();
  // Billing's executor is still billing's, and demo never lists the address.
  EXPECT_TRUE(stack_->WaitExecutorOnline("billing", billing(), absl::Seconds(5)).ok());
  EXPECT_EQ(stack_->ExecutorInstance("demo", billing()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CrossAppTest, BillingsExecutorRefusesEverythingMeantForDemo) {
  auto instance = stack_->ExecutorInstance("billing", billing());
  ASSERT_TRUE(instance.ok()) << instance.status();
  auto exec = v1::ExecutorService::NewStub(stack_->Channel(billing()));
  auto run_of = [&](int64_t id, const std::string& app) {
    v1::RunRequest run;
    run.set_run_id(id);
    run.set_job_id(id);
    run.set_app(app);
    run.set_executor_instance(*instance);
    run.set_handler("echo");
    run.set_param("a demo operator's param");
    return run;
  };
  v1::RunResponse resp;
  // What a dispatcher routing a demo run to this address signs: a token for demo@address.
  grpc::Status s =
      exec->Run(Ctx(stack_->ExecutorCallerToken("dispatcher", "demo", billing())).get(),
                run_of(990001, "demo"), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  // Even with a token for billing's executor, a run of app demo is refused.
  s = exec->Run(Ctx(stack_->ExecutorCallerToken("dispatcher", "billing", billing())).get(),
                run_of(990002, "demo"), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.disposition(), v1::RUN_DISPOSITION_REJECTED);
  EXPECT_TRUE(absl::StrContains(resp.message(), "run is for app \"demo\"")) << resp.message();
  // So is a run for another process at this address.
  v1::RunRequest stale = run_of(990003, "billing");
  stale.set_executor_instance("0123456789abcdef0123456789abcdef");
  s = exec->Run(Ctx(stack_->ExecutorCallerToken("dispatcher", "billing", billing())).get(), stale,
                &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.disposition(), v1::RUN_DISPOSITION_REJECTED);
  // Counted on the executor: none of them ran there.
  for (const auto& e : stack_->Executions(billing_)) {
    EXPECT_LT(e.run_id, 990001) << "run " << e.run_id << " executed on billing's executor";
  }
  // A proper billing run still runs (the refusals were not remembered as its own).
  s = exec->Run(Ctx(stack_->ExecutorCallerToken("dispatcher", "billing", billing())).get(),
                run_of(990003, "billing"), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.disposition(), v1::RUN_DISPOSITION_STARTED) << resp.message();
}

}  // namespace
}  // namespace jobwheel::security_testing
