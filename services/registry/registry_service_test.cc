// RegistryService and AppAdminService in process on port 0, on the real test
// PostgreSQL.

#include "services/registry/registry_service.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/auth/in_memory_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/base/work_pool.h"
#include "common/grpc/grpc_server.h"
#include "common/pg/pg_pool.h"
#include "common/testing/client_context.h"
#include "common/testing/pg_test_db.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "pqxx/pqxx"
#include "prometheus/registry.h"
#include "services/registry/address_policy.h"
#include "services/registry/app_admin_service.h"
#include "services/registry/executor_view.h"
#include "services/registry/pg_app_store.h"
#include "services/registry/pg_executor_store.h"
#include "services/registry/registry.h"
#include "services/registry/view_syncer.h"

namespace jobwheel::registry {
namespace {

using ::jobwheel::testing::Eventually;

constexpr char kExecutorToken[] = "exec";
constexpr char kAdminToken[] = "admin";

class RegistryServiceTest : public ::testing::Test {
 protected:
  // Admins create apps (an executor's registration never does): rows as CreateApp writes.
  void MakeApps(const std::vector<std::string>& apps) {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    for (const std::string& app : apps) {
      tx.exec_params("INSERT INTO apps (name) VALUES ($1) ON CONFLICT DO NOTHING", app);
    }
    tx.commit();
  }

  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    pool_ = std::make_unique<PgPool>(dsn_, 4);
    executor_store_ = std::make_unique<PgExecutorStore>(*pool_);
    app_store_ = std::make_unique<PgAppStore>(*pool_);
    view_ = std::make_unique<ExecutorView>(metrics_, 1);
    syncer_ =
        std::make_unique<ViewSyncer>(*executor_store_, std::make_unique<PgChangeFeed>(dsn_), *view_,
                                     metrics_, RealClock::Get(), ViewSyncer::Options());
    ASSERT_TRUE(syncer_->Start().ok());
    work_ = std::make_unique<WorkPool>(3, 100);
    RegistryOptions options;
    options.replica_id = "r1";
    options.register_deadline = absl::Seconds(1);
    options.recheck_interval = absl::Milliseconds(500);
    registry_ = std::make_unique<Registry>(options, *executor_store_, RealClock::Get(), metrics_);
    registry_->Start();
    TokenAuthenticator::Options auth_options;
    auth_options.admin_token = kAdminToken;
    auth_options.executor_token = kExecutorToken;
    auth_ = std::make_unique<TokenAuthenticator>(auth_options, &tokens_, RealClock::Get());
    RegistryService::Options service_options;
    service_options.authenticator = auth_.get();
    // WatchExecutors: tokens a dispatcher signed for audience "registry".
    CallerTokenVerifier::Options verifier_options;
    verifier_options.public_keys_pem[std::string(kIssuerDispatcher)] = dispatcher_keys_.public_pem;
    verifier_options.audience = std::string(kAudienceRegistry);
    service_options.watch_policy.callers =
        std::move(*CallerTokenVerifier::Create(verifier_options, RealClock::Get()));
    dispatcher_token_ = Signed(dispatcher_keys_, kIssuerDispatcher, kAudienceRegistry);
    service_options.load_store = executor_store_.get();
    // A local stack's policy (the registry listens on loopback), with the made-up addresses
    // the tests register allow-listed.
    AddressPolicyOptions address_options;
    address_options.allow_loopback = true;
    address_options.allowlist = *ParseAddressAllowlist("*=h,*=10.0.0.0/24", "allowlist");
    address_policy_ = std::make_unique<AddressPolicy>(address_options);
    service_options.address_policy = address_policy_.get();
    service_ =
        std::make_unique<RegistryService>(*registry_, *view_, *work_, metrics_, service_options);
    admin_ = std::make_unique<AppAdminService>(*app_store_, *view_, *work_, *auth_);
    int port = 0;
    auto server = StartGrpcServer("127.0.0.1:0", {service_.get(), admin_.get()}, {}, &port);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    auto channel = MakeChannel(absl::StrCat("127.0.0.1:", port));
    registry_stub_ = v1::RegistryService::NewStub(*channel);
    admin_stub_ = v1::AppAdminService::NewStub(*channel);
  }

  void TearDown() override {
    if (server_ == nullptr) return;
    registry_->Shutdown();
    registry_->TakeAllOffline();
    service_->CloseWatchers();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    syncer_->Shutdown();
    work_->Shutdown();
  }

  // A token signed with `pair` as `issuer` for `audience`.
  static std::string Signed(const CallerKeyPair& pair, absl::string_view issuer,
                            absl::string_view audience) {
    auto signer =
        CallerTokenSigner::Create(pair.private_pem, {std::string(issuer)}, RealClock::Get());
    return *(*signer)->TokenFor(audience);
  }

  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
    return ::jobwheel::testing::Ctx(token);
  }

  // A registration from a new executor process (each call its own instance id).
  v1::HeartbeatRequest Register(const std::string& app, const std::string& address) {
    v1::HeartbeatRequest req;
    req.mutable_register_()->set_app(app);
    req.mutable_register_()->set_address(address);
    req.mutable_register_()->set_instance_id(absl::StrCat("test-process-", ++processes_));
    req.mutable_register_()->add_handlers("echo");
    return req;
  }

  std::vector<std::string> Listed(const std::string& app) {
    auto ctx = Ctx(kAdminToken);
    v1::ListExecutorsRequest req;
    req.set_app(app);
    v1::ListExecutorsResponse resp;
    grpc::Status s = registry_stub_->ListExecutors(ctx.get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<std::string> out;
    for (const auto& e : resp.executors()) out.push_back(e.address());
    return out;
  }

  int64_t JobsFor(const std::string& app, int n) {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    for (int i = 0; i < n; ++i) {
      tx.exec_params("INSERT INTO jobs (app, name, schedule_kind) VALUES ($1, $2, 'NONE')", app,
                     absl::StrCat("job", i));
    }
    tx.commit();
    return n;
  }

  // An API token's secret.
  std::string ApiToken(const std::string& name, Role role, std::vector<std::string> apps) {
    const std::string secret = *GenerateTokenSecret();
    NewToken t;
    t.name = name;
    t.role = role;
    t.apps = std::move(apps);
    t.secret_hash = HashTokenSecret(secret);
    t.create_time = RealClock::Get().Now();
    EXPECT_TRUE(tokens_.Create(t).ok());
    return secret;
  }

  // The status that ends a heartbeat stream after `req` (OK if it was registered).
  grpc::Status RegisterOnce(const std::string& token, const v1::HeartbeatRequest& req) {
    auto ctx = Ctx(token);
    auto stream = registry_stub_->Heartbeat(ctx.get());
    stream->Write(req);
    v1::HeartbeatResponse resp;
    if (stream->Read(&resp) && resp.has_registered()) {
      ctx->TryCancel();
      (void)stream->Finish();
      return grpc::Status::OK;
    }
    return stream->Finish();
  }

  std::atomic<int> processes_{1000};  // Instance ids of Register (16+ characters).
  InMemoryTokenStore tokens_;
  const CallerKeyPair dispatcher_keys_ = *GenerateCallerKeyPair();
  const CallerKeyPair scheduler_keys_ = *GenerateCallerKeyPair();
  std::string dispatcher_token_;  // What dispatchers present on WatchExecutors.
  std::unique_ptr<AddressPolicy> address_policy_;
  std::unique_ptr<TokenAuthenticator> auth_;
  prometheus::Registry prom_;
  RegistryMetrics metrics_{prom_};
  std::string dsn_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgExecutorStore> executor_store_;
  std::unique_ptr<PgAppStore> app_store_;
  std::unique_ptr<ExecutorView> view_;
  std::unique_ptr<ViewSyncer> syncer_;
  std::unique_ptr<WorkPool> work_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<RegistryService> service_;
  std::unique_ptr<AppAdminService> admin_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::RegistryService::Stub> registry_stub_;
  std::unique_ptr<v1::AppAdminService::Stub> admin_stub_;
};

TEST_F(RegistryServiceTest, HeartbeatRegisterBeatGoodbye) {
  MakeApps({"demo"});
  auto ctx = Ctx(kExecutorToken);
  auto stream = registry_stub_->Heartbeat(ctx.get());
  ASSERT_TRUE(stream->Write(Register("demo", "127.0.0.1:7200")));
  v1::HeartbeatResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  ASSERT_TRUE(resp.has_registered());
  EXPECT_EQ(resp.registered().replica_id(), "r1");
  EXPECT_TRUE(Eventually([&] { return Listed("demo").size() == 1; }, absl::Seconds(5)));
  EXPECT_EQ(metrics_.sessions_open.Value(), 1);

  v1::HeartbeatRequest beat;
  beat.mutable_beat()->set_seq(42);
  ASSERT_TRUE(stream->Write(beat));
  ASSERT_TRUE(stream->Read(&resp));
  ASSERT_TRUE(resp.has_ack());
  EXPECT_EQ(resp.ack().seq(), 42);

  v1::HeartbeatRequest bye;
  bye.mutable_goodbye()->set_reason("test");
  ASSERT_TRUE(stream->Write(bye));
  stream->WritesDone();
  EXPECT_FALSE(stream->Read(&resp));
  grpc::Status s = stream->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message();
  // Committed before the stream finished.
  EXPECT_TRUE(executor_store_->GetOnline({{"demo", "127.0.0.1:7200"}})->empty());
  EXPECT_EQ(metrics_.offline_goodbye.Value(), 1);
  // The app was created with defaults.
  auto actx = Ctx(kAdminToken);
  v1::GetAppRequest get;
  get.set_name("demo");
  v1::GetAppResponse got;
  ASSERT_TRUE(admin_stub_->GetApp(actx.get(), get, &got).ok());
  EXPECT_EQ(got.app().address_type(), v1::ADDRESS_TYPE_AUTO);
}

TEST_F(RegistryServiceTest, HeartbeatRejectsBadInputAndBadTokens) {
  {
    auto ctx = Ctx(kExecutorToken);
    auto stream = registry_stub_->Heartbeat(ctx.get());
    ASSERT_TRUE(stream->Write(Register("demo", "no-port")));
    v1::HeartbeatResponse resp;
    EXPECT_FALSE(stream->Read(&resp));
    grpc::Status s = stream->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("register.address"), std::string::npos) << s.error_message();
  }
  {
    auto ctx = Ctx(kExecutorToken);
    auto stream = registry_stub_->Heartbeat(ctx.get());
    v1::HeartbeatRequest beat;
    beat.mutable_beat()->set_seq(1);
    ASSERT_TRUE(stream->Write(beat));
    v1::HeartbeatResponse resp;
    EXPECT_FALSE(stream->Read(&resp));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  }
  {
    auto ctx = Ctx(dispatcher_token_);  // Not an executor token.
    auto stream = registry_stub_->Heartbeat(ctx.get());
    stream->Write(Register("demo", "h:1"));
    v1::HeartbeatResponse resp;
    EXPECT_FALSE(stream->Read(&resp));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_EQ(metrics_.registrations_rejected.Value(),
            2);  // Bad address + bad token.
  auto ctx = Ctx(kExecutorToken);
  v1::ListExecutorsResponse resp;
  EXPECT_EQ(registry_stub_->ListExecutors(ctx.get(), {}, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(RegistryServiceTest, WatchExecutorsOnlyForDispatchers) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"no token", ""},
      {"the executor token", kExecutorToken},
      {"the admin token", kAdminToken},
      {"the scheduler's token", Signed(scheduler_keys_, kIssuerScheduler, kAudienceRegistry)},
      {"another key claiming to be a dispatcher",
       Signed(scheduler_keys_, kIssuerDispatcher, kAudienceRegistry)},
      {"the dispatcher's token for an executor",
       Signed(dispatcher_keys_, kIssuerDispatcher, "10.0.0.1:7200")},
  };
  for (const auto& [who, token] : refused) {
    SCOPED_TRACE(who);
    auto ctx = Ctx(token);
    auto watch = registry_stub_->WatchExecutors(ctx.get(), v1::WatchExecutorsRequest());
    v1::WatchExecutorsResponse event;
    EXPECT_FALSE(watch->Read(&event));
    EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  auto ctx = Ctx(dispatcher_token_);
  auto watch = registry_stub_->WatchExecutors(ctx.get(), v1::WatchExecutorsRequest());
  v1::WatchExecutorsResponse event;
  ASSERT_TRUE(watch->Read(&event));
  EXPECT_EQ(event.type(), v1::WATCH_EVENT_TYPE_SNAPSHOT);
  ctx->TryCancel();
  while (watch->Read(&event)) {
  }
  watch->Finish();
}

TEST_F(RegistryServiceTest, StreamCancelTakesOfflineAndWatchersSeeIt) {
  MakeApps({"demo"});
  auto wctx = Ctx(dispatcher_token_);
  wctx->set_deadline(std::chrono::system_clock::time_point::max());
  v1::WatchExecutorsRequest wreq;
  wreq.set_app("demo");
  auto watch = registry_stub_->WatchExecutors(wctx.get(), wreq);
  v1::WatchExecutorsResponse event;
  ASSERT_TRUE(watch->Read(&event));
  EXPECT_EQ(event.type(), v1::WATCH_EVENT_TYPE_SNAPSHOT);
  EXPECT_EQ(event.executors_size(), 0);
  EXPECT_TRUE(Eventually([&] { return metrics_.watchers.Value() == 1; }, absl::Seconds(5)));

  auto ctx = Ctx(kExecutorToken);
  auto stream = registry_stub_->Heartbeat(ctx.get());
  ASSERT_TRUE(stream->Write(Register("demo", "h:1")));
  v1::HeartbeatResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  ASSERT_TRUE(watch->Read(&event));
  EXPECT_EQ(event.type(), v1::WATCH_EVENT_TYPE_UPSERT);
  ASSERT_EQ(event.executors_size(), 1);
  EXPECT_EQ(event.executors(0).address(), "h:1");
  EXPECT_EQ(event.executors(0).handlers(0), "echo");
  const int64_t v1 = event.version();

  ctx->TryCancel();
  stream->Finish();
  ASSERT_TRUE(watch->Read(&event));
  EXPECT_EQ(event.type(), v1::WATCH_EVENT_TYPE_REMOVE);
  EXPECT_GT(event.version(), v1);
  // Counted by the session's close, which may finish just after the watchers heard of it.
  EXPECT_TRUE(
      Eventually([&] { return metrics_.offline_stream_closed.Value() == 1; }, absl::Seconds(5)));

  wctx->TryCancel();
  while (watch->Read(&event)) {
  }
  watch->Finish();
  EXPECT_TRUE(Eventually([&] { return metrics_.watchers.Value() == 0; }, absl::Seconds(5)));
}

TEST_F(RegistryServiceTest, AppAdminCrudAndManualAddresses) {
  v1::CreateAppRequest create;
  create.mutable_app()->set_name("m");
  create.mutable_app()->set_title("Manual");
  create.mutable_app()->set_address_type(v1::ADDRESS_TYPE_MANUAL);
  v1::CreateAppResponse created;
  {
    auto ctx = Ctx(kAdminToken);
    grpc::Status s = admin_stub_->CreateApp(ctx.get(), create, &created);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("app.manual_addresses"), std::string::npos);
  }
  create.mutable_app()->add_manual_addresses("10.0.0.9:7200");
  {
    auto ctx = Ctx(kAdminToken);
    ASSERT_TRUE(admin_stub_->CreateApp(ctx.get(), create, &created).ok());
    EXPECT_EQ(created.app().title(), "Manual");
    EXPECT_GT(created.app().create_time().seconds(), 0);
  }
  {
    auto ctx = Ctx(kAdminToken);
    EXPECT_EQ(admin_stub_->CreateApp(ctx.get(), create, &created).error_code(),
              grpc::StatusCode::ALREADY_EXISTS);
  }
  {
    auto ctx = Ctx(dispatcher_token_);  // Not the admin token.
    EXPECT_EQ(admin_stub_->CreateApp(ctx.get(), create, &created).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  // Watchers of a MANUAL app see its addresses.
  EXPECT_TRUE(Eventually([&] { return Listed("m") == std::vector<std::string>{"10.0.0.9:7200"}; },
                         absl::Seconds(5)));

  // A registered executor shows in online_addresses but not in the manual app's
  // set.
  auto hctx = Ctx(kExecutorToken);
  auto stream = registry_stub_->Heartbeat(hctx.get());
  ASSERT_TRUE(stream->Write(Register("m", "h:1")));
  v1::HeartbeatResponse hresp;
  ASSERT_TRUE(stream->Read(&hresp));
  EXPECT_TRUE(
      Eventually([&] { return view_->RegisteredAddresses("m").size() == 1; }, absl::Seconds(5)));
  {
    auto ctx = Ctx(kAdminToken);
    v1::GetAppRequest get;
    get.set_name("m");
    v1::GetAppResponse got;
    ASSERT_TRUE(admin_stub_->GetApp(ctx.get(), get, &got).ok());
    ASSERT_EQ(got.app().online_addresses_size(), 1);
    EXPECT_EQ(got.app().online_addresses(0), "h:1");
  }
  EXPECT_EQ(Listed("m"), std::vector<std::string>{"10.0.0.9:7200"});

  // Back to AUTO: the registered executor is the set.
  v1::UpdateAppRequest update;
  update.mutable_app()->set_name("m");
  update.mutable_app()->set_title("Auto now");
  v1::UpdateAppResponse updated;
  {
    auto ctx = Ctx(kAdminToken);
    ASSERT_TRUE(admin_stub_->UpdateApp(ctx.get(), update, &updated).ok());
    EXPECT_EQ(updated.app().address_type(), v1::ADDRESS_TYPE_AUTO);
    EXPECT_EQ(updated.app().title(), "Auto now");
  }
  EXPECT_TRUE(
      Eventually([&] { return Listed("m") == std::vector<std::string>{"h:1"}; }, absl::Seconds(5)));
  update.mutable_app()->set_name("missing");
  {
    auto ctx = Ctx(kAdminToken);
    grpc::Status s = admin_stub_->UpdateApp(ctx.get(), update, &updated);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_NE(s.error_message().find("missing"), std::string::npos);
  }
  {
    auto ctx = Ctx(kAdminToken);
    v1::ListAppsResponse apps;
    ASSERT_TRUE(admin_stub_->ListApps(ctx.get(), {}, &apps).ok());
    ASSERT_EQ(apps.apps_size(), 1);
    EXPECT_EQ(apps.apps(0).online_addresses_size(), 1);
  }
  hctx->TryCancel();
  stream->Finish();

  // Delete: refused while jobs use it, naming the count.
  JobsFor("m", 3);
  v1::DeleteAppRequest del;
  del.set_name("m");
  v1::DeleteAppResponse deleted;
  {
    auto ctx = Ctx(kAdminToken);
    grpc::Status s = admin_stub_->DeleteApp(ctx.get(), del, &deleted);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(s.error_message().find("3 jobs"), std::string::npos) << s.error_message();
  }
  {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    tx.exec("DELETE FROM jobs");
    tx.commit();
  }
  {
    auto ctx = Ctx(kAdminToken);
    EXPECT_TRUE(admin_stub_->DeleteApp(ctx.get(), del, &deleted).ok());
  }
  {
    auto ctx = Ctx(kAdminToken);
    EXPECT_EQ(admin_stub_->DeleteApp(ctx.get(), del, &deleted).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  {
    auto ctx = Ctx(kAdminToken);
    v1::GetAppRequest get;
    get.set_name("bad name");
    v1::GetAppResponse got;
    grpc::Status s = admin_stub_->GetApp(ctx.get(), get, &got);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("name:"), std::string::npos);
  }
}

TEST_F(RegistryServiceTest, PerAppExecutorTokensRegisterOnlyForTheirApps) {
  MakeApps({"demo", "billing"});
  const std::string demo = ApiToken("exec-demo", Role::kExecutor, {"demo"});
  const std::string admin = ApiToken("admin", Role::kAdmin, {});
  {
    auto ctx = Ctx(demo);
    auto stream = registry_stub_->Heartbeat(ctx.get());
    ASSERT_TRUE(stream->Write(Register("demo", "10.0.0.1:7200")));
    v1::HeartbeatResponse resp;
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_TRUE(resp.has_registered());
    stream->WritesDone();
    while (stream->Read(&resp)) {
    }
    stream->Finish();
  }
  {
    auto ctx = Ctx(demo);  // Valid, but for another app.
    auto stream = registry_stub_->Heartbeat(ctx.get());
    stream->Write(Register("billing", "10.0.0.2:7200"));
    v1::HeartbeatResponse resp;
    EXPECT_FALSE(stream->Read(&resp));
    grpc::Status s = stream->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_NE(s.error_message().find("register.app"), std::string::npos) << s.error_message();
  }
  for (const std::string& token : {admin, std::string("exec-wrong"), std::string()}) {
    auto ctx = Ctx(token);  // An admin token is not an executor credential.
    auto stream = registry_stub_->Heartbeat(ctx.get());
    stream->Write(Register("demo", "10.0.0.3:7200"));
    v1::HeartbeatResponse resp;
    EXPECT_FALSE(stream->Read(&resp));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
  }
  EXPECT_TRUE(Eventually([&] { return Listed("billing").empty(); }, absl::Seconds(1)));
  EXPECT_EQ(metrics_.registrations_rejected.Value(), 4);
}

TEST_F(RegistryServiceTest, AppAdminWritesNeedAdminReadsAnyAdminRole) {
  const std::string viewer = ApiToken("viewer", Role::kViewer, {"*"});
  const std::string op = ApiToken("ops", Role::kOperator, {"demo"});
  const std::string admin = ApiToken("admin", Role::kAdmin, {});
  v1::CreateAppRequest create;
  create.mutable_app()->set_name("shop");
  v1::CreateAppResponse created;
  for (const std::string& token : {viewer, op}) {
    auto ctx = Ctx(token);
    EXPECT_EQ(admin_stub_->CreateApp(ctx.get(), create, &created).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    auto ctx = Ctx(admin);
    ASSERT_TRUE(admin_stub_->CreateApp(ctx.get(), create, &created).ok());
  }
  for (const std::string& token : {viewer, admin}) {
    auto ctx = Ctx(token);
    v1::ListAppsResponse listed;
    ASSERT_TRUE(admin_stub_->ListApps(ctx.get(), {}, &listed).ok());
    EXPECT_EQ(listed.apps_size(), 1);
  }
  {
    auto ctx = Ctx(op);  // An operator of demo only: shop is not its to see.
    v1::ListAppsResponse listed;
    ASSERT_TRUE(admin_stub_->ListApps(ctx.get(), {}, &listed).ok());
    EXPECT_EQ(listed.apps_size(), 0);
  }
  auto ctx = Ctx(kExecutorToken);
  v1::ListAppsResponse listed;
  EXPECT_EQ(admin_stub_->ListApps(ctx.get(), {}, &listed).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

// ListExecutors with API tokens: each admin-API role sees the executors of the apps it may
// read, with their load; executor tokens and the dispatchers' watch tokens are refused.
TEST_F(RegistryServiceTest, ListExecutorsScopedToTheTokensApps) {
  MakeApps({"alpha", "beta"});
  struct Stream {
    std::unique_ptr<grpc::ClientContext> ctx;
    std::unique_ptr<grpc::ClientReaderWriter<v1::HeartbeatRequest, v1::HeartbeatResponse>> rw;
  };
  std::vector<Stream> streams;
  for (const auto& [app, address] : std::vector<std::pair<std::string, std::string>>{
           {"alpha", "10.0.0.1:7200"}, {"beta", "10.0.0.2:7200"}}) {
    Stream st;
    st.ctx = Ctx(kExecutorToken);
    st.rw = registry_stub_->Heartbeat(st.ctx.get());
    ASSERT_TRUE(st.rw->Write(Register(app, address)));
    v1::HeartbeatResponse resp;
    ASSERT_TRUE(st.rw->Read(&resp));
    ASSERT_TRUE(resp.has_registered());
    v1::HeartbeatRequest beat;
    beat.mutable_beat()->set_seq(1);
    ASSERT_TRUE(st.rw->Write(beat));
    ASSERT_TRUE(st.rw->Read(&resp));
    streams.push_back(std::move(st));
  }
  ASSERT_TRUE(Eventually([&] { return Listed("").size() == 2; }, absl::Seconds(5)));

  // The apps of the executors a caller sees, and its status code.
  auto list = [&](const std::string& token, const std::string& app,
                  grpc::StatusCode* code = nullptr) {
    auto ctx = Ctx(token);
    v1::ListExecutorsRequest req;
    req.set_app(app);
    v1::ListExecutorsResponse resp;
    grpc::Status s = registry_stub_->ListExecutors(ctx.get(), req, &resp);
    if (code != nullptr) *code = s.error_code();
    std::vector<std::string> apps;
    for (const v1::Executor& e : resp.executors()) apps.push_back(e.app());
    std::sort(apps.begin(), apps.end());
    return apps;
  };
  using Apps = std::vector<std::string>;
  const std::string admin = ApiToken("admin", Role::kAdmin, {});
  const std::string viewer_all = ApiToken("viewer-all", Role::kViewer, {"*"});
  const std::string viewer_alpha = ApiToken("viewer-alpha", Role::kViewer, {"alpha"});
  const std::string op_beta = ApiToken("ops-beta", Role::kOperator, {"beta"});
  const std::string exec_alpha = ApiToken("exec-alpha", Role::kExecutor, {"alpha"});
  grpc::StatusCode dispatcher_code = grpc::StatusCode::OK;
  EXPECT_TRUE(list(dispatcher_token_, "", &dispatcher_code).empty());
  EXPECT_EQ(dispatcher_code, grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list(kAdminToken, ""), (Apps{"alpha", "beta"}));
  EXPECT_EQ(list(admin, ""), (Apps{"alpha", "beta"}));
  EXPECT_EQ(list(viewer_all, ""), (Apps{"alpha", "beta"}));
  EXPECT_EQ(list(viewer_alpha, ""), (Apps{"alpha"}));
  EXPECT_EQ(list(viewer_alpha, "alpha"), (Apps{"alpha"}));
  EXPECT_EQ(list(op_beta, ""), (Apps{"beta"}));
  grpc::StatusCode code;
  EXPECT_TRUE(list(viewer_alpha, "beta", &code).empty());
  EXPECT_EQ(code, grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(list(op_beta, "alpha", &code).empty());
  EXPECT_EQ(code, grpc::StatusCode::PERMISSION_DENIED);
  for (const std::string& token :
       {exec_alpha, std::string(kExecutorToken), std::string("nope"), std::string()}) {
    EXPECT_TRUE(list(token, "alpha", &code).empty()) << token;
    EXPECT_EQ(code, grpc::StatusCode::UNAUTHENTICATED) << token;
  }
  {
    auto ctx = Ctx(viewer_alpha);
    v1::ListExecutorsRequest req;
    req.set_app("al pha");
    v1::ListExecutorsResponse resp;
    grpc::Status s = registry_stub_->ListExecutors(ctx.get(), req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message().rfind("app:", 0), 0u) << s.error_message();
  }
  // The load an operator needs: running, queued, last beat (the beats keep both online).
  int64_t seq = 1;
  EXPECT_TRUE(Eventually(
      [&] {
        for (Stream& st : streams) {
          v1::HeartbeatRequest beat;
          beat.mutable_beat()->set_seq(++seq);
          beat.mutable_beat()->set_running(3);
          beat.mutable_beat()->set_queued(2);
          v1::HeartbeatResponse ack;
          if (!st.rw->Write(beat) || !st.rw->Read(&ack)) return false;
        }
        auto ctx = Ctx(viewer_alpha);
        v1::ListExecutorsResponse resp;
        if (!registry_stub_->ListExecutors(ctx.get(), {}, &resp).ok()) return false;
        return resp.executors_size() == 1 && resp.executors(0).running() == 3 &&
               resp.executors(0).queued() == 2 && resp.executors(0).has_last_beat_time() &&
               resp.executors(0).address() == "10.0.0.1:7200";
      },
      absl::Seconds(5)));

  // Apps are scoped the same way.
  {
    auto ctx = Ctx(viewer_alpha);
    v1::ListAppsResponse listed;
    ASSERT_TRUE(admin_stub_->ListApps(ctx.get(), {}, &listed).ok());
    ASSERT_EQ(listed.apps_size(), 1);
    EXPECT_EQ(listed.apps(0).name(), "alpha");
    v1::GetAppRequest get;
    get.set_name("beta");
    v1::GetAppResponse got;
    auto gctx = Ctx(viewer_alpha);
    EXPECT_EQ(admin_stub_->GetApp(gctx.get(), get, &got).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_FALSE(got.has_app());
  }
  for (Stream& st : streams) {
    st.rw->WritesDone();
    v1::HeartbeatResponse resp;
    while (st.rw->Read(&resp)) {
    }
    st.rw->Finish();
  }
}

}  // namespace
}  // namespace jobwheel::registry

namespace jobwheel::registry {
namespace {

TEST_F(RegistryServiceTest, AddressesThatAreNotTheCallersOwnAreRefusedAndNeverListed) {
  MakeApps({"demo"});
  const std::string demo = ApiToken("exec-demo", Role::kExecutor, {"demo"});
  // The caller is 127.0.0.1: none of these is its own (nor allow-listed).
  for (const char* address :
       {"192.0.2.7:7200", "unix:7200", "169.254.169.254:80", "exec.example.com:7200",
        "0.0.0.0:7200", "[fd00:ec2::254]:80", "10.0.1.1:7200"}) {
    grpc::Status s = RegisterOnce(demo, Register("demo", address));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << address;
    EXPECT_EQ(s.error_message().rfind("register.address: ", 0), 0u) << s.error_message();
    EXPECT_EQ(s.error_message().find(demo), std::string::npos) << "token in the message";
  }
  EXPECT_EQ(metrics_.registrations_rejected.Value(), 7);
  EXPECT_EQ(metrics_.registrations_accepted.Value(), 0);
  EXPECT_TRUE(Listed("demo").empty());
  // Its own (loopback) address is fine.
  EXPECT_TRUE(RegisterOnce(demo, Register("demo", "127.0.0.1:7201")).ok());
}

TEST_F(RegistryServiceTest, OnlineAddressIsNotTakenOverButFreeOnceItsStreamCloses) {
  MakeApps({"demo"});
  auto ctx = Ctx(kExecutorToken);
  auto stream = registry_stub_->Heartbeat(ctx.get());
  ASSERT_TRUE(stream->Write(Register("demo", "10.0.0.5:7200")));
  v1::HeartbeatResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  ASSERT_TRUE(resp.has_registered());
  grpc::Status s = RegisterOnce(kExecutorToken, Register("demo", "10.0.0.5:7200"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS) << s.error_message();
  EXPECT_EQ(s.error_message().rfind("register.address: ", 0), 0u) << s.error_message();
  // The first stream is untouched: it still beats and is acknowledged.
  v1::HeartbeatRequest beat;
  beat.mutable_beat()->set_seq(7);
  ASSERT_TRUE(stream->Write(beat));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(resp.ack().seq(), 7);
  // A restart: the old stream ends, the new process registers at once.
  ctx->TryCancel();
  (void)stream->Finish();
  EXPECT_TRUE(Eventually(
      [&] { return RegisterOnce(kExecutorToken, Register("demo", "10.0.0.5:7200")).ok(); },
      absl::Seconds(2)));
}

TEST_F(RegistryServiceTest, StreamWithoutRegisterIsClosedAfterTheDeadline) {
  const absl::Time t0 = RealClock::Get().Now();
  auto ctx = Ctx(kExecutorToken);
  auto stream = registry_stub_->Heartbeat(ctx.get());
  v1::HeartbeatResponse resp;
  EXPECT_FALSE(stream->Read(&resp));  // Nothing sent: the registry gives up.
  grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_NE(s.error_message().find("no valid register within 1s"), std::string::npos);
  EXPECT_LT(RealClock::Get().Now() - t0, absl::Seconds(3));
  EXPECT_TRUE(Eventually([&] { return registry_->open_sessions() == 0; }, absl::Seconds(2)));
}

TEST_F(RegistryServiceTest, RevokedTokenLosesItsOpenStreamWithinSeconds) {
  MakeApps({"demo"});
  const std::string demo = ApiToken("exec-demo", Role::kExecutor, {"demo"});
  auto ctx = Ctx(demo);
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = registry_stub_->Heartbeat(ctx.get());
  ASSERT_TRUE(stream->Write(Register("demo", "10.0.0.6:7200")));
  v1::HeartbeatResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  ASSERT_TRUE(resp.has_registered());
  ASSERT_TRUE(Eventually([&] { return Listed("demo").size() == 1; }, absl::Seconds(5)));
  int64_t id = 0;
  auto rows = tokens_.List(false);
  ASSERT_TRUE(rows.ok());
  for (const TokenRow& row : *rows) {
    if (row.name == "exec-demo") id = row.id;
  }
  ASSERT_TRUE(tokens_.Revoke(id, RealClock::Get().Now()).ok());
  const absl::Time t0 = RealClock::Get().Now();
  // Keep beating like an executor; the registry ends the stream.
  int64_t seq = 0;
  std::thread beater([&] {
    v1::HeartbeatRequest beat;
    while (RealClock::Get().Now() - t0 < absl::Seconds(10)) {
      beat.mutable_beat()->set_seq(++seq);
      if (!stream->Write(beat)) return;
      absl::SleepFor(absl::Milliseconds(200));  // The executor's beat interval, not a wait.
    }
  });
  while (stream->Read(&resp)) {
  }
  const absl::Duration took = RealClock::Get().Now() - t0;
  beater.join();
  grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_LT(took, absl::Seconds(5)) << "cache 3 s + re-check every 0.5 s";
  EXPECT_TRUE(Eventually([&] { return Listed("demo").empty(); }, absl::Seconds(2)));
}

// Heartbeat and ListExecutors count failed authentications per peer (as the admin services
// do): a peer over its limit is refused RESOURCE_EXHAUSTED, even with a valid token the
// registry has not seen yet, and without a token lookup, until its bucket refills; another
// peer is unaffected. The service listens on every address, so 127.0.0.1 and [::1] are two
// peers.
TEST_F(RegistryServiceTest, FailedAuthenticationsAreLimitedPerPeer) {
  MakeApps({"demo"});
  FakeClock clock;
  TokenAuthenticator::Options auth_options;
  auth_options.failed_auth.burst = 3;
  auth_options.failed_auth.per_second = 1;
  TokenAuthenticator auth(auth_options, &tokens_, clock);
  RegistryService::Options service_options;
  service_options.authenticator = &auth;
  service_options.address_policy = address_policy_.get();
  RegistryService limited(*registry_, *view_, *work_, metrics_, service_options);
  int port = 0;
  auto server = StartGrpcServer("[::]:0", {&limited}, {}, &port);
  ASSERT_TRUE(server.ok()) << server.status();
  auto v4 = MakeChannel(absl::StrCat("127.0.0.1:", port));
  auto v6 = MakeChannel(absl::StrCat("[::1]:", port));
  ASSERT_TRUE(v4.ok() && v6.ok());
  std::unique_ptr<v1::RegistryService::Stub> near = v1::RegistryService::NewStub(*v4);
  std::unique_ptr<v1::RegistryService::Stub> other = v1::RegistryService::NewStub(*v6);

  auto list = [&](v1::RegistryService::Stub& stub, const std::string& token) {
    v1::ListExecutorsResponse resp;
    return stub.ListExecutors(Ctx(token).get(), {}, &resp).error_code();
  };
  auto heartbeat = [&](v1::RegistryService::Stub& stub, const std::string& token,
                       const std::string& address) {
    // An empty token: no authorization metadata at all.
    std::unique_ptr<grpc::ClientContext> ctx =
        token.empty() ? std::make_unique<grpc::ClientContext>() : Ctx(token);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto stream = stub.Heartbeat(ctx.get());
    stream->Write(Register("demo", address));
    v1::HeartbeatResponse resp;
    if (stream->Read(&resp) && resp.has_registered()) {
      ctx->TryCancel();
      (void)stream->Finish();
      return grpc::StatusCode::OK;
    }
    return stream->Finish().error_code();
  };
  using grpc::StatusCode;

  // 127.0.0.1 spends its burst: no token, junk on each method.
  EXPECT_EQ(heartbeat(*near, "", "10.0.0.7:7200"), StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(heartbeat(*near, *GenerateTokenSecret(), "10.0.0.7:7200"), StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list(*near, *GenerateTokenSecret()), StatusCode::UNAUTHENTICATED);
  // Over its limit: refused even with good tokens, and the store is not asked.
  const std::string executor = ApiToken("exec-demo", Role::kExecutor, {"demo"});
  const std::string viewer = ApiToken("viewer-all", Role::kViewer, {"*"});
  const int lookups = tokens_.lookups();
  EXPECT_EQ(heartbeat(*near, executor, "10.0.0.7:7200"), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(heartbeat(*near, "", "10.0.0.7:7200"), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(list(*near, viewer), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(list(*near, *GenerateTokenSecret()), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(tokens_.lookups(), lookups);

  // [::1] is another peer: its own burst, the same tokens work.
  EXPECT_EQ(list(*other, *GenerateTokenSecret()), StatusCode::UNAUTHENTICATED);
  const std::string viewer2 = ApiToken("viewer-all-2", Role::kViewer, {"*"});
  EXPECT_EQ(list(*other, viewer2), StatusCode::OK);
  const std::string executor2 = ApiToken("exec-demo-2", Role::kExecutor, {"demo"});
  EXPECT_EQ(heartbeat(*other, executor2, "10.0.0.8:7200"), StatusCode::OK);

  // One second refills one failure for 127.0.0.1: its good token works, one more junk token
  // is an ordinary failure, the next is refused again.
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(heartbeat(*near, executor, "10.0.0.7:7200"), StatusCode::OK);
  EXPECT_EQ(list(*near, viewer), StatusCode::OK);
  EXPECT_EQ(list(*near, *GenerateTokenSecret()), StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list(*near, *GenerateTokenSecret()), StatusCode::RESOURCE_EXHAUSTED);
  // Tokens the registry has seen valid keep working for a peer over its limit.
  EXPECT_EQ(list(*near, viewer), StatusCode::OK);
  EXPECT_EQ(auth.stats().rate_limited, 5);

  (*server)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  EXPECT_TRUE(Eventually([&] { return registry_->open_sessions() == 0; }, absl::Seconds(5)));
}

}  // namespace
}  // namespace jobwheel::registry
