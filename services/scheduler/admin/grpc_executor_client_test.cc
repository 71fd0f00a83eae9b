#include "services/scheduler/admin/grpc_executor_client.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/grpc/grpc_server.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/executor.grpc.pb.h"

namespace jobwheel::scheduler::admin {
namespace {

// An executor that requires a token the scheduler signed for it and echoes what it was asked.
class FakeExecutor final : public jobwheel::v1::ExecutorService::Service {
 public:
  TokenPolicy policy;

  grpc::Status Kill(grpc::ServerContext* ctx, const jobwheel::v1::KillRequest* req,
                    jobwheel::v1::KillResponse* resp) override {
    absl::Status auth = CheckBearer(ctx->client_metadata(), policy);
    if (!auth.ok()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no token");
    resp->set_killed(req->run_id() == 7);
    resp->set_message(req->reason());
    return grpc::Status::OK;
  }
  grpc::Status Log(grpc::ServerContext* ctx, const jobwheel::v1::LogRequest* req,
                   jobwheel::v1::LogResponse* resp) override {
    absl::Status auth = CheckBearer(ctx->client_metadata(), policy);
    if (!auth.ok()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no token");
    resp->add_lines(absl::StrCat("run ", req->run_id(), " from ", req->from_line()));
    resp->set_from_line(req->from_line());
    resp->set_to_line(req->from_line());
    resp->set_end(true);
    return grpc::Status::OK;
  }
};

class GrpcExecutorClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pair = GenerateCallerKeyPair();
    auto other = GenerateCallerKeyPair();
    ASSERT_TRUE(pair.ok() && other.ok());
    CallerTokenVerifier::Options vo;
    vo.public_keys_pem[std::string(kIssuerScheduler)] = pair->public_pem;
    auto verifier = CallerTokenVerifier::Create(vo, RealClock::Get());
    ASSERT_TRUE(verifier.ok()) << verifier.status();
    verifier_ = std::move(*verifier);
    executor_.policy.callers = verifier_;
    signer_ = *CallerTokenSigner::Create(pair->private_pem, {std::string(kIssuerScheduler)},
                                         RealClock::Get());
    other_signer_ = *CallerTokenSigner::Create(other->private_pem, {std::string(kIssuerScheduler)},
                                               RealClock::Get());
    int port = 0;
    auto server = StartGrpcServer("127.0.0.1:0", {&executor_}, {}, &port);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    address_ = absl::StrCat("127.0.0.1:", port);
    verifier_->SetAudience("demo@" + address_);
  }
  void TearDown() override { server_->Shutdown(); }

  std::shared_ptr<CallerTokenVerifier> verifier_;
  std::unique_ptr<CallerTokenSigner> signer_, other_signer_;
  FakeExecutor executor_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(GrpcExecutorClientTest, KillAndLogCarryATokenSignedForThatExecutor) {
  GrpcExecutorClient client(ClientTls{}, signer_.get());
  jobwheel::v1::KillRequest kill;
  kill.set_run_id(7);
  kill.set_reason("stop");
  auto killed = client.Kill("demo", address_, kill);
  ASSERT_TRUE(killed.ok()) << killed.status();
  EXPECT_TRUE(killed->killed());
  EXPECT_EQ(killed->message(), "stop");

  jobwheel::v1::LogRequest log;
  log.set_run_id(7);
  log.set_from_line(3);
  auto lines = client.Log("demo", address_, log);
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->lines_size(), 1);
  EXPECT_EQ(lines->lines(0), "run 7 from 3");
  EXPECT_TRUE(lines->end());
}

TEST_F(GrpcExecutorClientTest, WrongKeyNoTokenAndUnreachableAreErrors) {
  GrpcExecutorClient wrong(ClientTls{}, other_signer_.get());
  jobwheel::v1::KillRequest kill;
  kill.set_run_id(7);
  EXPECT_EQ(wrong.Kill("demo", address_, kill).status().code(), absl::StatusCode::kUnauthenticated);
  // A token for another app's executor at this address is refused here.
  GrpcExecutorClient right_key(ClientTls{}, signer_.get());
  EXPECT_EQ(right_key.Kill("billing", address_, kill).status().code(),
            absl::StatusCode::kUnauthenticated);
  GrpcExecutorClient none(ClientTls{}, nullptr);
  EXPECT_EQ(none.Kill("demo", address_, kill).status().code(), absl::StatusCode::kUnauthenticated);

  GrpcExecutorClientOptions options;
  options.kill_deadline = absl::Milliseconds(500);
  GrpcExecutorClient client(ClientTls{}, signer_.get(), options);
  auto s = client.Kill("demo", "127.0.0.1:1", kill);  // Nothing listens on port 1.
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.status().code() == absl::StatusCode::kUnavailable ||
              s.status().code() == absl::StatusCode::kDeadlineExceeded)
      << s.status();
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
