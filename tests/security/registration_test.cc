// An executor's address is its own, with the real binaries: a process holding one app's
// executor token cannot register an address that is not its own (another host, metadata,
// link-local, unix:, a DNS name) nor take over a live executor's address; the dispatcher only
// ever runs jobs on the real executor. Heartbeat streams that never register are closed after
// the registry's deadline, and a revoked token's open stream is closed within seconds, its
// executor offline.

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"
#include "pqxx/pqxx"
#include "tests/security/demo_stack_suite.h"

namespace jobwheel::security_testing {

using testing::Ctx;
using testing::Stack;
namespace {

int NextInstance() {
  static std::atomic<int> next{0};
  return next.fetch_add(1);
}

using testing::Eventually;

class RegistrationTest : public DemoStackSuite {
 protected:
  static std::unique_ptr<v1::RegistryService::Stub> Registry() {
    return v1::RegistryService::NewStub(stack_->Channel(stack_->registry()));
  }

  // The status that ends a heartbeat stream registering `address` (OK: it was registered;
  // the stream is then cancelled).
  static grpc::Status RegisterOnce(const std::string& token, const std::string& app,
                                   const std::string& address) {
    auto ctx = Ctx(token);
    auto stream = Registry()->Heartbeat(ctx.get());
    v1::HeartbeatRequest req;
    req.mutable_register_()->set_app(app);
    req.mutable_register_()->set_address(address);
    // A process of its own: a fresh instance id (a reconnect would keep its id).
    req.mutable_register_()->set_instance_id(
        absl::StrCat("security-test-", getpid(), "-", NextInstance()));
    req.mutable_register_()->add_handlers("echo");
    req.mutable_register_()->set_allow_scripts(true);
    stream->Write(req);
    v1::HeartbeatResponse resp;
    if (stream->Read(&resp) && resp.has_registered()) {
      ctx->TryCancel();
      (void)stream->Finish();
      return grpc::Status::OK;
    }
    return stream->Finish();
  }

  // What the registry lists for `app` (ListExecutors as the bootstrap admin).
  static std::vector<std::string> Listed(const std::string& app) {
    v1::ListExecutorsRequest req;
    req.set_app(app);
    v1::ListExecutorsResponse resp;
    grpc::Status s = Registry()->ListExecutors(Ctx(stack_->admin_token()).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<std::string> out;
    for (const auto& e : resp.executors()) out.push_back(e.address());
    return out;
  }
};

TEST_F(RegistrationTest, SpoofedAddressesAreRefusedNeverListedAndNeverCalled) {
  // The attacker: this process, with the demo executor's token, on the registry's machine.
  const std::string& token = *executor_token_;
  for (const std::string address :
       {"10.9.8.7:7200", "192.0.2.1:443", "169.254.169.254:80", "[fd00:ec2::254]:80",
        "169.254.1.1:7200", "unix:7200", "unix-abstract:7200", "metadata.google.internal:80",
        "executor.example.com:7200", "0.0.0.0:7200"}) {
    grpc::Status s = RegisterOnce(token, "demo", address);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << address;
    EXPECT_TRUE(absl::StartsWith(s.error_message(), "register.address: ")) << s.error_message();
    EXPECT_FALSE(absl::StrContains(s.error_message(), token));
  }
  // The live executor's own address: no takeover.
  grpc::Status s = RegisterOnce(token, "demo", stack_->executor());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS) << s.error_message();
  EXPECT_TRUE(absl::StartsWith(s.error_message(), "register.address: ")) << s.error_message();

  EXPECT_EQ(Listed("demo"), std::vector<std::string>{stack_->executor()});
  {
    pqxx::connection conn(stack_->dsn());
    pqxx::work tx(conn);
    // Nothing was ever written for a refused address, and the live row was not replaced.
    EXPECT_EQ(tx.exec1("SELECT count(*) FROM executors")[0].as<int>(), 1);
    EXPECT_EQ(tx.exec1("SELECT address FROM executors")[0].as<std::string>(), stack_->executor());
  }

  // The dispatcher runs demo's jobs on the real executor only.
  auto jobs = v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
  v1::CreateJobRequest create;
  v1::Job* job = create.mutable_job();
  job->set_app("demo");
  job->set_name("after-spoofing");
  job->set_handler("echo");
  job->mutable_schedule()->mutable_none();
  job->set_enabled(true);
  v1::CreateJobResponse created;
  ASSERT_TRUE(jobs->CreateJob(Ctx(stack_->admin_token()).get(), create, &created).ok());
  const int64_t job_id = created.job().id();
  v1::TriggerJobRequest trigger;
  trigger.set_id(job_id);
  v1::TriggerJobResponse triggered;
  ASSERT_TRUE(jobs->TriggerJob(Ctx(stack_->admin_token()).get(), trigger, &triggered).ok());
  v1::ListRunsResponse runs;
  ASSERT_TRUE(Eventually(
      [&] {
        v1::ListRunsRequest req;
        req.set_job_id(job_id);
        runs.Clear();
        return jobs->ListRuns(Ctx(stack_->admin_token()).get(), req, &runs).ok() &&
               runs.runs_size() == 1 && runs.runs(0).status() == v1::RUN_STATUS_SUCCEEDED;
      },
      absl::Seconds(15)));
  EXPECT_EQ(runs.runs(0).executor_address(), stack_->executor());
  int ran_here = 0;
  for (const testing::Execution& e : stack_->Executions(0)) ran_here += e.job_id == job_id;
  EXPECT_GE(ran_here, 1);
}

TEST_F(RegistrationTest, StreamThatNeverRegistersIsClosedAfterTheDeadline) {
  const absl::Time t0 = RealClock::Get().Now();
  auto ctx = Ctx(*executor_token_);
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = Registry()->Heartbeat(ctx.get());
  v1::HeartbeatResponse resp;
  EXPECT_FALSE(stream->Read(&resp));  // Nothing sent: the registry ends it.
  grpc::Status s = stream->Finish();
  const absl::Duration took = RealClock::Get().Now() - t0;
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "no valid register within 5s"))
      << s.error_message();
  EXPECT_GE(took, absl::Seconds(4)) << "the deadline is 5 s";
  EXPECT_LT(took, absl::Seconds(8)) << "checked every 100 ms";
}

TEST_F(RegistrationTest, RevokedTokenLosesItsOpenStreamAndItsExecutorGoesOffline) {
  auto secret = stack_->CreateToken("exec-demo-revoked", v1::ROLE_EXECUTOR, {"demo"});
  ASSERT_TRUE(secret.ok()) << secret.status();
  Stack::ExecutorSpec spec;
  spec.token = *secret;
  auto index = stack_->AddExecutor(spec);  // Waits until it is online.
  ASSERT_TRUE(index.ok()) << index.status();
  const std::string address = stack_->executor(*index);

  auto tokens = v1::TokenAdminService::NewStub(stack_->Channel(stack_->scheduler()));
  v1::ListTokensResponse list;
  ASSERT_TRUE(tokens->ListTokens(Ctx(stack_->admin_token()).get(), {}, &list).ok());
  int64_t id = 0;
  for (const auto& t : list.tokens()) {
    if (t.name() == "exec-demo-revoked") id = t.id();
  }
  ASSERT_GT(id, 0);
  v1::RevokeTokenRequest revoke;
  revoke.set_id(id);
  v1::RevokeTokenResponse revoked;
  ASSERT_TRUE(tokens->RevokeToken(Ctx(stack_->admin_token()).get(), revoke, &revoked).ok());
  const absl::Time t0 = RealClock::Get().Now();
  auto listed = [&] {
    for (const std::string& a : Listed("demo")) {
      if (a == address) return true;
    }
    return false;
  };
  ASSERT_TRUE(Eventually([&] { return !listed(); }, absl::Seconds(15)))
      << address << " still online " << absl::FormatDuration(RealClock::Get().Now() - t0)
      << " after its token was revoked";
  const absl::Duration took = RealClock::Get().Now() - t0;
  std::cerr << "revoked executor offline after " << absl::FormatDuration(took) << "\n";
  EXPECT_LT(took, absl::Seconds(7)) << "token cache 3 s + re-check every 2 s";
  // Its reconnections are refused: the token is gone for good.
  grpc::Status s = RegisterOnce(*secret, "demo", "127.0.0.1:1");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  // The other executor is untouched.
  EXPECT_TRUE(absl::c_linear_search(Listed("demo"), stack_->executor()));
}

}  // namespace
}  // namespace jobwheel::security_testing
