#include "services/dispatcher/dispatcher_service.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/auth/failed_auth_limiter.h"
#include "common/auth/in_memory_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/grpc/grpc_server.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "prometheus/registry.h"
#include "services/dispatcher/dispatcher_metrics.h"
#include "services/dispatcher/fake_executor_clients.h"

namespace jobwheel::dispatcher {
namespace {

// Answers every call with empty outcomes; the service test is about the gRPC surface.
class NullStore : public DispatchStore {
 public:
  absl::StatusOr<std::vector<FireResult>> DispatchFires(const std::vector<v1::Fire>& fires,
                                                        absl::Time, const FirePlanner&) override {
    std::vector<FireResult> out(fires.size());
    for (size_t i = 0; i < fires.size(); ++i) {
      out[i].fire_id = fires[i].fire_id();
      out[i].status = v1::FIRE_STATUS_DISPATCHED;
      out[i].duplicate = true;
    }
    return out;
  }
  absl::StatusOr<std::vector<int64_t>> RecordTriggerOutcomes(
      const std::vector<TriggerOutcome>&) override {
    return std::vector<int64_t>();
  }
  absl::StatusOr<std::vector<int64_t>> RerouteRuns(const std::vector<Reroute>& r) override {
    std::vector<int64_t> ids;
    for (const Reroute& x : r) ids.push_back(x.run_id);
    return ids;
  }
  absl::StatusOr<std::vector<ResultRecord>> RecordResults(
      const std::vector<v1::RunResult>& r, absl::Time, const AppScope& scope,
      const std::vector<TriggerOutcome>&) override {
    {
      absl::MutexLock lock(&mu);
      last_scope = scope;
    }
    std::vector<ResultRecord> out;
    for (const auto& x : r) out.push_back({x.run_id(), ResultDisposition::kRecorded, x.status()});
    return out;
  }
  absl::Mutex mu;
  AppScope last_scope ABSL_GUARDED_BY(mu);
};

class DispatcherServiceTest : public ::testing::Test {
 protected:
  void Start(bool insecure, FailedAuthLimiter::Options failed_auth = {}) {
    v1::WatchExecutorsResponse snap;
    snap.set_type(v1::WATCH_EVENT_TYPE_SNAPSHOT);
    directory_.Apply(snap);
    dispatcher_.Start();
    TokenAuthenticator::Options auth_options;
    auth_options.insecure_dev = insecure;
    auth_options.executor_token = "executor-secret";
    auth_options.failed_auth = failed_auth;
    // The fake clock stands still: a peer's failed-authentication budget never refills.
    auth_ = std::make_unique<TokenAuthenticator>(auth_options, &tokens_, clock_);
    service_ = std::make_unique<DispatcherServiceImpl>(
        dispatcher_, work_, TokenPolicy{insecure, {}, SchedulerOnly()}, *auth_);
    int port = 0;
    auto server = StartGrpcServer("127.0.0.1:0", {service_.get()}, {}, &port);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    stub_ = v1::DispatcherService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    work_.Shutdown();
    dispatcher_.Shutdown();
  }

  // Dispatch's policy: tokens the scheduler signed for audience "dispatcher".
  std::shared_ptr<const CallerTokenVerifier> SchedulerOnly() {
    CallerTokenVerifier::Options o;
    o.public_keys_pem[std::string(kIssuerScheduler)] = scheduler_keys_.public_pem;
    o.audience = std::string(kAudienceDispatcher);
    return std::move(*CallerTokenVerifier::Create(o, RealClock::Get()));
  }
  // A token signed with `pair` as `issuer` for `audience`.
  static std::string Signed(const CallerKeyPair& pair, absl::string_view issuer,
                            absl::string_view audience) {
    auto signer =
        CallerTokenSigner::Create(pair.private_pem, {std::string(issuer)}, RealClock::Get());
    return *(*signer)->TokenFor(audience);
  }

  grpc::Status Dispatch(const std::string& token, const std::string& handler = "echo") {
    grpc::ClientContext ctx;
    AddBearer(ctx, token);
    v1::DispatchRequest req;
    v1::Fire* f = req.add_fires();
    f->set_fire_id(1);
    f->mutable_job()->set_id(2);
    f->mutable_job()->set_app("demo");
    f->mutable_job()->set_handler(handler);
    v1::DispatchResponse resp;
    return stub_->Dispatch(&ctx, req, &resp);
  }
  grpc::Status Report(const std::string& token, v1::RunStatus status,
                      v1::ReportResultsResponse* resp) {
    grpc::ClientContext ctx;
    AddBearer(ctx, token);
    v1::ReportResultsRequest req;
    req.add_results()->set_run_id(5);
    req.mutable_results(0)->set_status(status);
    return stub_->ReportResults(&ctx, req, resp);
  }

  const CallerKeyPair scheduler_keys_ = *GenerateCallerKeyPair();
  const CallerKeyPair dispatcher_keys_ = *GenerateCallerKeyPair();
  FakeClock clock_;
  prometheus::Registry registry_;
  DispatcherMetrics metrics_{registry_};
  std::mt19937_64 gen_{1};
  FakeExecutorClients executors_;
  ExecutorDirectory directory_;
  NullStore store_;
  Router router_{clock_, gen_, executors_};
  TriggerPools pools_{clock_, TriggerPools::Options()};
  Dispatcher dispatcher_{store_, directory_, router_, executors_,
                         pools_, metrics_,   clock_,  Dispatcher::Options()};
  WorkPool work_{2, 10};
  InMemoryTokenStore tokens_;
  std::unique_ptr<TokenAuthenticator> auth_;
  std::unique_ptr<DispatcherServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::DispatcherService::Stub> stub_;
};

TEST_F(DispatcherServiceTest, TokensAreCheckedPerRpc) {
  Start(/*insecure=*/false);
  EXPECT_EQ(Dispatch("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Dispatch("executor-secret").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // Only the scheduler, and only with a token made for the dispatcher.
  const std::string scheduler = Signed(scheduler_keys_, kIssuerScheduler, kAudienceDispatcher);
  EXPECT_TRUE(Dispatch(scheduler).ok());
  EXPECT_EQ(Dispatch(Signed(dispatcher_keys_, kIssuerDispatcher, kAudienceDispatcher)).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Dispatch(Signed(dispatcher_keys_, kIssuerScheduler, kAudienceDispatcher)).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Dispatch(Signed(scheduler_keys_, kIssuerScheduler, "127.0.0.1:7200")).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::ReportResultsResponse resp;
  EXPECT_EQ(Report(scheduler, v1::RUN_STATUS_SUCCEEDED, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(Report("executor-secret", v1::RUN_STATUS_SUCCEEDED, &resp).ok());
  ASSERT_EQ(resp.acked_run_ids_size(), 1);
  EXPECT_EQ(resp.acked_run_ids(0), 5);
  grpc::Status bad = Report("executor-secret", v1::RUN_STATUS_PENDING, &resp);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.error_message().find("results[0].status"), std::string::npos)
      << bad.error_message();
}

TEST_F(DispatcherServiceTest, PerAppExecutorApiTokensReportResults) {
  Start(/*insecure=*/false);
  auto token = [&](const std::string& name, Role role) {
    const std::string secret = *GenerateTokenSecret();
    NewToken t;
    t.name = name;
    t.role = role;
    t.apps = {"demo"};
    t.secret_hash = HashTokenSecret(secret);
    EXPECT_TRUE(tokens_.Create(t).ok());
    return secret;
  };
  const std::string exec = token("exec-demo", Role::kExecutor);
  const std::string op = token("ops-demo", Role::kOperator);
  v1::ReportResultsResponse resp;
  EXPECT_TRUE(Report(exec, v1::RUN_STATUS_SUCCEEDED, &resp).ok());
  {
    absl::MutexLock lock(&store_.mu);
    ASSERT_TRUE(store_.last_scope.has_value());  // The store confines it to app demo.
    EXPECT_EQ(*store_.last_scope, std::vector<std::string>{"demo"});
  }
  EXPECT_TRUE(Report("executor-secret", v1::RUN_STATUS_SUCCEEDED, &resp).ok());
  {
    absl::MutexLock lock(&store_.mu);
    EXPECT_FALSE(store_.last_scope.has_value());  // The bootstrap token covers every app.
  }
  EXPECT_EQ(Report(op, v1::RUN_STATUS_SUCCEEDED, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Report("", v1::RUN_STATUS_SUCCEEDED, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // An API token is never an internal caller's credential.
  EXPECT_EQ(Dispatch(exec).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

// Failed authentications on ReportResults count against the caller's host: past its budget,
// unknown tokens are refused without a lookup, while the tokens this dispatcher knows work on.
TEST_F(DispatcherServiceTest, ReportResultsLimitsFailedAuthenticationsPerPeer) {
  FailedAuthLimiter::Options limits;
  limits.burst = 3;
  limits.per_second = 1;
  Start(/*insecure=*/false, limits);
  v1::ReportResultsResponse resp;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Report(absl::StrCat("junk-", i), v1::RUN_STATUS_SUCCEEDED, &resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED)
        << i;
  }
  EXPECT_EQ(auth_->stats().rate_limited, 0);
  grpc::Status limited = Report("junk-3", v1::RUN_STATUS_SUCCEEDED, &resp);
  EXPECT_EQ(limited.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << limited.error_message();
  EXPECT_EQ(auth_->stats().rate_limited, 1);
  const std::string secret = *GenerateTokenSecret();  // Valid, but never seen: refused too.
  NewToken t;
  t.name = "exec-demo";
  t.role = Role::kExecutor;
  t.apps = {"demo"};
  t.secret_hash = HashTokenSecret(secret);
  ASSERT_TRUE(tokens_.Create(t).ok());
  EXPECT_EQ(Report(secret, v1::RUN_STATUS_SUCCEEDED, &resp).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Report("executor-secret", v1::RUN_STATUS_SUCCEEDED, &resp).ok());
}

// Bad requests are refused at the edge, naming the field, before any work is queued.
TEST_F(DispatcherServiceTest, InvalidRequestsAreRefusedNamingTheField) {
  Start(/*insecure=*/false);
  const std::string scheduler = Signed(scheduler_keys_, kIssuerScheduler, kAudienceDispatcher);
  grpc::Status bad = Dispatch(scheduler, /*handler=*/"");
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.error_message().find("fires[0].job.handler"), std::string::npos)
      << bad.error_message();
  // Authentication comes first: an unauthenticated caller learns nothing about its request.
  EXPECT_EQ(Dispatch("", /*handler=*/"").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  v1::ReportResultsResponse resp;
  EXPECT_EQ(Report("", v1::RUN_STATUS_RUNNING, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(DispatcherServiceTest, InsecureDevAcceptsAnything) {
  Start(/*insecure=*/true);
  EXPECT_TRUE(Dispatch("").ok());
  v1::ReportResultsResponse resp;
  EXPECT_TRUE(Report("", v1::RUN_STATUS_FAILED, &resp).ok());
}

}  // namespace
}  // namespace jobwheel::dispatcher
