// AuthorizeOnPool behind a real in-process gRPC server: one method of TokenAdminService
// (GetCurrentToken) answers with the caller's token name, as the admin services do.
#include "common/grpc/unary_on_pool.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/auth/in_memory_token_store.h"
#include "common/base/work_pool.h"
#include "common/grpc/grpc_server.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"

namespace jobwheel {
namespace {

constexpr char kService[] = "TokenAdminService";

// GetCurrentToken through AuthorizeOnPool; the work returns `fail` when it is not OK.
class CurrentTokenService final : public v1::TokenAdminService::CallbackService {
 public:
  CurrentTokenService(WorkPool& pool, TokenAuthenticator& auth) : pool_(pool), auth_(auth) {}

  grpc::ServerUnaryReactor* GetCurrentToken(grpc::CallbackServerContext* ctx,
                                            const v1::GetCurrentTokenRequest*,
                                            v1::GetCurrentTokenResponse* resp) override {
    return AuthorizeOnPool(
        ctx, pool_, auth_, kService, [this, resp](const Principal& p) -> absl::Status {
          ++works;
          if (!fail.ok()) return fail;
          resp->mutable_token()->set_name(p.name);
          resp->mutable_token()->set_role(p.role == Role::kOperator ? v1::ROLE_OPERATOR
                                                                    : v1::ROLE_UNSPECIFIED);
          return absl::OkStatus();
        });
  }

  std::atomic<int> works{0};
  absl::Status fail;  // Set before calls.

 private:
  WorkPool& pool_;
  TokenAuthenticator& auth_;
};

class UnaryOnPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto secret = GenerateTokenSecret();
    ASSERT_TRUE(secret.ok()) << secret.status();
    operator_secret_ = *secret;
    NewToken token;
    token.name = "ops-demo";
    token.role = Role::kOperator;
    token.apps = {"demo"};
    token.secret_hash = HashTokenSecret(operator_secret_);
    token.create_time = clock_.Now();
    ASSERT_TRUE(store_.Create(token).ok());

    auth_ = std::make_unique<TokenAuthenticator>(TokenAuthenticator::Options(), &store_, clock_);
    service_ = std::make_unique<CurrentTokenService>(pool_, *auth_);
    int port = 0;
    auto server = StartGrpcServer("127.0.0.1:0", {service_.get()}, {}, &port);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    auto channel = MakeChannel(absl::StrCat("127.0.0.1:", port));
    ASSERT_TRUE(channel.ok()) << channel.status();
    stub_ = v1::TokenAdminService::NewStub(*channel);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    pool_.Shutdown();
  }

  grpc::Status Call(const std::string& token, v1::GetCurrentTokenResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    return stub_->GetCurrentToken(&ctx, {}, resp);
  }

  FakeClock clock_;
  InMemoryTokenStore store_;
  std::string operator_secret_;
  WorkPool pool_{1, /*max_queue=*/1};
  std::unique_ptr<TokenAuthenticator> auth_;
  std::unique_ptr<CurrentTokenService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::TokenAdminService::Stub> stub_;
};

TEST_F(UnaryOnPoolTest, NoTokenIsUnauthenticatedAndTheWorkDoesNotRun) {
  v1::GetCurrentTokenResponse resp;
  grpc::Status s = Call("", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  s = Call("jw_not-a-token", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_EQ(service_->works.load(), 0);
}

TEST_F(UnaryOnPoolTest, AGoodTokensWorkSeesItsPrincipal) {
  v1::GetCurrentTokenResponse resp;
  grpc::Status s = Call(operator_secret_, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.token().name(), "ops-demo");
  EXPECT_EQ(resp.token().role(), v1::ROLE_OPERATOR);
  EXPECT_EQ(service_->works.load(), 1);
}

TEST_F(UnaryOnPoolTest, TheWorksErrorIsTheAnswer) {
  service_->fail = absl::NotFoundError("job 42 not found");
  v1::GetCurrentTokenResponse resp;
  grpc::Status s = Call(operator_secret_, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "job 42 not found");
}

TEST_F(UnaryOnPoolTest, AFullPoolAnswersResourceExhaustedAtOnce) {
  // The one worker busy and the one queue place taken.
  absl::Notification started, release, drained;
  ASSERT_TRUE(pool_.Submit([&] {
    started.Notify();
    release.WaitForNotification();
  }));
  started.WaitForNotification();
  ASSERT_TRUE(pool_.Submit([&] { drained.Notify(); }));

  v1::GetCurrentTokenResponse resp;
  grpc::Status s = Call(operator_secret_, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(), "TokenAdminService: too many calls in progress; retry later");
  EXPECT_EQ(PoolFullStatus(kService).error_message(), s.error_message());
  EXPECT_EQ(service_->works.load(), 0);
  EXPECT_EQ(auth_->stats().lookups, 0);  // Refused before authentication.

  // Once the pool has room again, calls are served.
  release.Notify();
  drained.WaitForNotification();  // The queue is empty again.
  s = Call(operator_secret_, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(service_->works.load(), 1);
}

}  // namespace
}  // namespace jobwheel
