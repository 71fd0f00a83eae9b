// AppAdminService in process on port 0 with its stores in memory: reads are scoped to the apps
// a token may read ("*": every app; an empty list: none), writes need an ADMIN.
#include "services/registry/app_admin_service.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/auth/bearer.h"
#include "common/auth/in_memory_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/base/work_pool.h"
#include "common/grpc/grpc_server.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/registry/app_store.h"
#include "services/registry/executor_view.h"
#include "services/registry/registry_metrics.h"

namespace jobwheel::registry {
namespace {

constexpr char kAdmin[] = "admin-secret";

// Apps by name, in memory.
class MemoryAppStore : public AppStore {
 public:
  using AppStore::Create;
  using AppStore::Delete;
  using AppStore::SetDraining;
  using AppStore::Update;
  absl::StatusOr<v1::App> Create(const v1::App& app, const v1::AuditEvent* audit) override {
    absl::MutexLock lock(&mu_);
    Audited(audit);
    if (!apps_.emplace(app.name(), app).second) {
      return absl::AlreadyExistsError(absl::StrCat("app ", app.name(), " exists"));
    }
    return app;
  }
  absl::StatusOr<v1::App> Update(const v1::App& app, const v1::AuditEvent* audit) override {
    absl::MutexLock lock(&mu_);
    Audited(audit);
    auto it = apps_.find(app.name());
    if (it == apps_.end()) return absl::NotFoundError(absl::StrCat("app ", app.name()));
    it->second = app;
    return app;
  }
  absl::StatusOr<v1::App> Get(const std::string& name) override {
    absl::MutexLock lock(&mu_);
    auto it = apps_.find(name);
    if (it == apps_.end()) return absl::NotFoundError(absl::StrCat("app ", name, " not found"));
    return it->second;
  }
  absl::StatusOr<std::vector<v1::App>> List() override {
    absl::MutexLock lock(&mu_);
    std::vector<v1::App> out;
    for (const auto& [name, app] : apps_) out.push_back(app);
    return out;
  }
  absl::Status Delete(const std::string& name, const v1::AuditEvent* audit) override {
    absl::MutexLock lock(&mu_);
    Audited(audit);
    apps_.erase(name);
    return absl::OkStatus();
  }
  absl::Status SetDraining(const std::string& app, const std::string& address, bool draining,
                           const std::string& reason, const std::string& actor,
                           const v1::AuditEvent* audit) override {
    absl::MutexLock lock(&mu_);
    Audited(audit);
    if (apps_.count(app) == 0) return absl::NotFoundError(absl::StrCat("app ", app, ": not found"));
    if (draining) {
      drains_[{app, address}] = reason + "|" + actor;
    } else {
      drains_.erase({app, address});
    }
    return absl::OkStatus();
  }
  // The actions of the audited calls that reached the store, in order.
  std::vector<std::string> audited() {
    absl::MutexLock lock(&mu_);
    return audited_;
  }
  std::map<std::pair<std::string, std::string>, std::string> drains() {
    absl::MutexLock lock(&mu_);
    return drains_;
  }

 private:
  void Audited(const v1::AuditEvent* audit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    audited_.push_back(audit == nullptr ? "(none)"
                                        : audit->action() + " by " + audit->actor_name());
  }

  absl::Mutex mu_;
  std::vector<std::string> audited_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::App> apps_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, std::string> drains_ ABSL_GUARDED_BY(mu_);
};

class AppAdminServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TokenAuthenticator::Options o;
    o.admin_token = kAdmin;
    auth_ = std::make_unique<TokenAuthenticator>(o, &tokens_, clock_);
    service_ = std::make_unique<AppAdminService>(store_, view_, work_, *auth_);
    int port = 0;
    auto server = StartGrpcServer("127.0.0.1:0", {service_.get()}, {}, &port);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    auto channel = MakeChannel(absl::StrCat("127.0.0.1:", port));
    ASSERT_TRUE(channel.ok());
    stub_ = v1::AppAdminService::NewStub(*channel);
    for (const char* name : {"alpha", "beta"}) {
      v1::App app;
      app.set_name(name);
      ASSERT_TRUE(store_.Create(app).ok());
    }
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    work_.Shutdown();
  }

  std::string Token(const std::string& name, Role role, std::vector<std::string> apps) {
    const std::string secret = *GenerateTokenSecret();
    NewToken t;
    t.name = name;
    t.role = role;
    t.apps = std::move(apps);
    t.secret_hash = HashTokenSecret(secret);
    t.create_time = clock_.Now();
    EXPECT_TRUE(tokens_.Create(t).ok());
    return secret;
  }

  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    AddBearer(*ctx, token);
    return ctx;
  }

  std::vector<std::string> Listed(const std::string& token) {
    v1::ListAppsResponse resp;
    grpc::Status s = stub_->ListApps(Ctx(token).get(), {}, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<std::string> names;
    for (const v1::App& a : resp.apps()) names.push_back(a.name());
    return names;
  }

  grpc::StatusCode Get(const std::string& token, const std::string& name) {
    v1::GetAppRequest req;
    req.set_name(name);
    v1::GetAppResponse resp;
    return stub_->GetApp(Ctx(token).get(), req, &resp).error_code();
  }

  FakeClock clock_;
  InMemoryTokenStore tokens_;
  std::unique_ptr<TokenAuthenticator> auth_;
  MemoryAppStore store_;
  prometheus::Registry registry_;
  RegistryMetrics metrics_{registry_};
  ExecutorView view_{metrics_, 1};
  WorkPool work_{2, 100};
  std::unique_ptr<AppAdminService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::AppAdminService::Stub> stub_;
};

using Names = std::vector<std::string>;

TEST_F(AppAdminServiceTest, ReadsAreScopedToTheTokensApps) {
  const std::string none = Token("viewer-none", Role::kViewer, {});
  const std::string all = Token("viewer-all", Role::kViewer, {"*"});
  const std::string alpha = Token("viewer-alpha", Role::kViewer, {"alpha"});
  const std::string op_beta = Token("ops-beta", Role::kOperator, {"beta"});
  EXPECT_EQ(Listed(kAdmin), (Names{"alpha", "beta"}));
  EXPECT_EQ(Listed(all), (Names{"alpha", "beta"}));
  EXPECT_EQ(Listed(alpha), (Names{"alpha"}));
  EXPECT_EQ(Listed(op_beta), (Names{"beta"}));
  EXPECT_EQ(Listed(none), Names{});  // An empty app list is no app.

  EXPECT_EQ(Get(alpha, "alpha"), grpc::StatusCode::OK);
  EXPECT_EQ(Get(all, "beta"), grpc::StatusCode::OK);
  // Another app is refused before it is looked up: existing or not, the same answer.
  EXPECT_EQ(Get(alpha, "beta"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Get(alpha, "gamma"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Get(none, "alpha"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Get(kAdmin, "gamma"), grpc::StatusCode::NOT_FOUND);

  // Writes need an ADMIN, even for an operator of every app.
  const std::string op_all = Token("ops-all", Role::kOperator, {"*"});
  v1::CreateAppRequest create;
  create.mutable_app()->set_name("gamma");
  v1::CreateAppResponse created;
  EXPECT_EQ(stub_->CreateApp(Ctx(op_all).get(), create, &created).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(stub_->CreateApp(Ctx(kAdmin).get(), create, &created).ok());
  // Only the admitted write reached the store, with its audit event (SetUp's are unaudited).
  EXPECT_EQ(store_.audited(), (Names{"(none)", "(none)", "CreateApp by bootstrap-admin"}));
}

TEST_F(AppAdminServiceTest, JunkTokensAreRateLimitedPerPeer) {
  int exhausted = 0;
  for (int i = 0; i < 60; ++i) {
    v1::ListAppsResponse resp;
    grpc::Status s = stub_->ListApps(Ctx(*GenerateTokenSecret()).get(), {}, &resp);
    EXPECT_NE(s.error_code(), grpc::StatusCode::OK);
    exhausted += s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
  }
  // The fake clock stands still: the burst (20) and no more reached the store.
  EXPECT_EQ(exhausted, 40);
  EXPECT_EQ(tokens_.lookups(), 20);
  EXPECT_EQ(Listed(kAdmin), (Names{"alpha", "beta"}));
}

}  // namespace
}  // namespace jobwheel::registry
