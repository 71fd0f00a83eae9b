// TokenAdminService on port 0 with an in-memory store: admins create, list and revoke tokens;
// only hashes are stored; the new token works at once and stops working when revoked.
#include "services/scheduler/admin/token_admin_service.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/auth/in_memory_token_store.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/client_context.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"

namespace jobwheel::scheduler::admin {
namespace {

constexpr char kAdmin[] = "bootstrap-admin";

class TokenAdminServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TokenAuthenticator::Options o;
    o.admin_token = kAdmin;
    auth_ = std::make_unique<TokenAuthenticator>(o, &store_, clock_);
    service_ = std::make_unique<TokenAdminService>(core_, *auth_);
    int port = 0;
    auto server = StartGrpcServer("127.0.0.1:0", {service_.get()}, {}, &port);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    stub_ =
        jobwheel::v1::TokenAdminService::NewStub(*MakeChannel(absl::StrCat("127.0.0.1:", port)));
  }
  void TearDown() override { server_->Shutdown(); }

  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
    return ::jobwheel::testing::Ctx(token);
  }

  grpc::Status Create(const std::string& token, const std::string& name, jobwheel::v1::Role role,
                      std::vector<std::string> apps, jobwheel::v1::CreateTokenResponse* resp) {
    jobwheel::v1::CreateTokenRequest req;
    req.set_name(name);
    req.set_role(role);
    for (auto& a : apps) req.add_apps(a);
    return stub_->CreateToken(Ctx(token).get(), req, resp);
  }

  FakeClock clock_;
  InMemoryTokenStore store_;
  TokenAdmin core_{store_, clock_};
  std::unique_ptr<TokenAuthenticator> auth_;
  std::unique_ptr<TokenAdminService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<jobwheel::v1::TokenAdminService::Stub> stub_;
};

TEST_F(TokenAdminServiceTest, AdminCreatesListsAndRevokes) {
  jobwheel::v1::CreateTokenResponse created;
  grpc::Status s = Create(kAdmin, "ops-demo", jobwheel::v1::ROLE_OPERATOR, {"demo"}, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(LooksLikeTokenSecret(created.secret())) << created.secret();
  EXPECT_EQ(created.token().role(), jobwheel::v1::ROLE_OPERATOR);
  EXPECT_EQ(created.token().apps_size(), 1);
  EXPECT_GT(created.token().id(), 0);
  // Only the hash is stored.
  ASSERT_EQ(store_.Hashes().size(), 1u);
  EXPECT_EQ(store_.Hashes()[0], HashTokenSecret(created.secret()));

  // The new token authenticates at once, as an operator (so not for token admin).
  auto p = auth_->AuthenticateToken(created.secret());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->role, Role::kOperator);
  jobwheel::v1::ListTokensResponse listed;
  EXPECT_EQ(stub_->ListTokens(Ctx(created.secret()).get(), {}, &listed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(stub_->ListTokens(Ctx(kAdmin).get(), {}, &listed).ok());
  ASSERT_EQ(listed.tokens_size(), 1);
  EXPECT_EQ(listed.tokens(0).name(), "ops-demo");
  // No secret in any listing.
  EXPECT_FALSE(absl::StrContains(listed.DebugString(), created.secret().substr(3)));

  jobwheel::v1::RevokeTokenRequest revoke;
  revoke.set_id(created.token().id());
  jobwheel::v1::RevokeTokenResponse revoked;
  ASSERT_TRUE(stub_->RevokeToken(Ctx(kAdmin).get(), revoke, &revoked).ok());
  EXPECT_TRUE(revoked.token().has_revoke_time());
  clock_.Advance(absl::Seconds(5));  // Past the authenticator's cache.
  EXPECT_EQ(auth_->AuthenticateToken(created.secret()).status().code(),
            absl::StatusCode::kUnauthenticated);
  ASSERT_TRUE(stub_->ListTokens(Ctx(kAdmin).get(), {}, &listed).ok());
  EXPECT_EQ(listed.tokens_size(), 0);
  jobwheel::v1::ListTokensRequest all;
  all.set_include_revoked(true);
  ASSERT_TRUE(stub_->ListTokens(Ctx(kAdmin).get(), all, &listed).ok());
  EXPECT_EQ(listed.tokens_size(), 1);
}

TEST_F(TokenAdminServiceTest, OnlyAdminsAndValidRequests) {
  jobwheel::v1::CreateTokenResponse resp;
  EXPECT_EQ(Create("", "x", jobwheel::v1::ROLE_ADMIN, {}, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Create("cluster", "x", jobwheel::v1::ROLE_ADMIN, {}, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  struct Case {
    std::string name;
    jobwheel::v1::Role role;
    std::vector<std::string> apps;
    std::string field;
  };
  for (const Case& c : std::vector<Case>{
           {"", jobwheel::v1::ROLE_VIEWER, {}, "name"},
           {std::string(200, 'n'), jobwheel::v1::ROLE_VIEWER, {}, "name"},
           {"a\nb", jobwheel::v1::ROLE_VIEWER, {}, "name"},
           {"x", jobwheel::v1::ROLE_UNSPECIFIED, {}, "role"},
           {"x", static_cast<jobwheel::v1::Role>(42), {}, "role"},
           {"x", jobwheel::v1::ROLE_ADMIN, {"demo"}, "apps"},
           {"x", jobwheel::v1::ROLE_OPERATOR, {}, "apps"},
           {"x", jobwheel::v1::ROLE_EXECUTOR, {}, "apps"},
           {"x", jobwheel::v1::ROLE_OPERATOR, {"de mo"}, "apps[0]"},
           {"x", jobwheel::v1::ROLE_OPERATOR, {"a", "a"}, "apps[1]"},
           {"x", jobwheel::v1::ROLE_EXECUTOR, {"*"}, "apps[0]"},
           {"x", jobwheel::v1::ROLE_ADMIN, {"*"}, "apps[0]"},
           {"x", jobwheel::v1::ROLE_VIEWER, {"demo", "*"}, "apps[1]"},
           {"x", jobwheel::v1::ROLE_OPERATOR, {"*", "demo"}, "apps[0]"},
       }) {
    grpc::Status s = Create(kAdmin, c.name, c.role, c.apps, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.name;
    EXPECT_EQ(s.error_message().rfind(c.field + ":", 0), 0u) << s.error_message();
  }
  jobwheel::v1::CreateTokenRequest past;
  past.set_name("old");
  past.set_role(jobwheel::v1::ROLE_VIEWER);
  past.mutable_expire_time()->set_seconds(absl::ToUnixSeconds(clock_.Now()) - 1);
  grpc::Status s = stub_->CreateToken(Ctx(kAdmin).get(), past, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("expire_time:", 0), 0u) << s.error_message();
  EXPECT_TRUE(store_.Hashes().empty());
  // "*" alone: every app, for viewers and operators; a viewer may also have no app.
  EXPECT_TRUE(Create(kAdmin, "viewer-all", jobwheel::v1::ROLE_VIEWER, {"*"}, &resp).ok());
  EXPECT_TRUE(Create(kAdmin, "ops-all", jobwheel::v1::ROLE_OPERATOR, {"*"}, &resp).ok());
  EXPECT_TRUE(Create(kAdmin, "viewer-none", jobwheel::v1::ROLE_VIEWER, {}, &resp).ok());
  jobwheel::v1::RevokeTokenRequest revoke;
  revoke.set_id(-1);
  jobwheel::v1::RevokeTokenResponse revoked;
  EXPECT_EQ(stub_->RevokeToken(Ctx(kAdmin).get(), revoke, &revoked).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  revoke.set_id(99);
  EXPECT_EQ(stub_->RevokeToken(Ctx(kAdmin).get(), revoke, &revoked).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(TokenAdminServiceTest, GetCurrentTokenAnswersEveryAdminApiRole) {
  // A bootstrap admin token has no row.
  jobwheel::v1::GetCurrentTokenResponse me;
  grpc::Status s = stub_->GetCurrentToken(Ctx(kAdmin).get(), {}, &me);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(me.token().id(), 0);
  EXPECT_EQ(me.token().name(), "bootstrap-admin");
  EXPECT_EQ(me.token().role(), jobwheel::v1::ROLE_ADMIN);
  EXPECT_EQ(me.token().apps_size(), 0);

  // API tokens get their own row back (never another's, never a secret).
  jobwheel::v1::CreateTokenResponse viewer, op, exec;
  ASSERT_TRUE(Create(kAdmin, "viewer-a", jobwheel::v1::ROLE_VIEWER, {"a"}, &viewer).ok());
  jobwheel::v1::CreateTokenRequest expiring;
  expiring.set_name("ops-b");
  expiring.set_role(jobwheel::v1::ROLE_OPERATOR);
  expiring.add_apps("b");
  expiring.add_apps("c");
  expiring.mutable_expire_time()->set_seconds(absl::ToUnixSeconds(clock_.Now()) + 3600);
  ASSERT_TRUE(stub_->CreateToken(Ctx(kAdmin).get(), expiring, &op).ok());
  ASSERT_TRUE(Create(kAdmin, "exec-a", jobwheel::v1::ROLE_EXECUTOR, {"a"}, &exec).ok());

  s = stub_->GetCurrentToken(Ctx(viewer.secret()).get(), {}, &me);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(me.token().id(), viewer.token().id());
  EXPECT_EQ(me.token().name(), "viewer-a");
  EXPECT_EQ(me.token().role(), jobwheel::v1::ROLE_VIEWER);
  ASSERT_EQ(me.token().apps_size(), 1);
  EXPECT_EQ(me.token().apps(0), "a");
  EXPECT_FALSE(me.token().has_expire_time());

  s = stub_->GetCurrentToken(Ctx(op.secret()).get(), {}, &me);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(me.token().id(), op.token().id());
  EXPECT_EQ(me.token().role(), jobwheel::v1::ROLE_OPERATOR);
  EXPECT_EQ(me.token().apps_size(), 2);
  EXPECT_EQ(me.token().expire_time().seconds(), expiring.expire_time().seconds());
  EXPECT_TRUE(me.token().has_create_time());

  // Executor and cluster tokens are not admin-API credentials; no token is refused.
  EXPECT_EQ(stub_->GetCurrentToken(Ctx(exec.secret()).get(), {}, &me).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(stub_->GetCurrentToken(Ctx("cluster").get(), {}, &me).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(stub_->GetCurrentToken(Ctx("").get(), {}, &me).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  // Revoked: refused once the authenticator's cache has expired.
  jobwheel::v1::RevokeTokenRequest revoke;
  revoke.set_id(viewer.token().id());
  jobwheel::v1::RevokeTokenResponse revoked;
  ASSERT_TRUE(stub_->RevokeToken(Ctx(kAdmin).get(), revoke, &revoked).ok());
  // Within the cache period the row is gone already: still no data of another token.
  EXPECT_EQ(stub_->GetCurrentToken(Ctx(viewer.secret()).get(), {}, &me).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(stub_->GetCurrentToken(Ctx(viewer.secret()).get(), {}, &me).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST(TokenAdminCurrentTokenTest, InsecureDevIsAnAdmin) {
  FakeClock clock;
  InMemoryTokenStore store;
  TokenAdmin core(store, clock);
  TokenAuthenticator::Options o;
  o.insecure_dev = true;
  TokenAuthenticator auth(o, &store, clock);
  auto p = auth.Authenticate(absl::nullopt);
  ASSERT_TRUE(p.ok()) << p.status();
  auto t = core.CurrentToken(*p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->id(), 0);
  EXPECT_EQ(t->name(), "insecure-dev");
  EXPECT_EQ(t->role(), jobwheel::v1::ROLE_ADMIN);
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
