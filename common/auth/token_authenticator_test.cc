#include "common/auth/token_authenticator.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "common/auth/in_memory_token_store.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

constexpr char kAdmin[] = "bootstrap-admin-token-0123456789";
constexpr char kExecutor[] = "executor-token-0123456789abcdef";

std::string Bearer(const std::string& token) { return "Bearer " + token; }

class TokenAuthTest : public ::testing::Test {
 protected:
  TokenAuthenticator::Options Options() {
    TokenAuthenticator::Options o;
    o.admin_token = kAdmin;
    o.executor_token = kExecutor;
    return o;
  }

  // Creates an API token and returns its secret.
  std::string Create(const std::string& name, Role role, std::vector<std::string> apps,
                     absl::optional<absl::Time> expire = absl::nullopt) {
    auto secret = GenerateTokenSecret();
    EXPECT_TRUE(secret.ok());
    NewToken t;
    t.name = name;
    t.role = role;
    t.apps = std::move(apps);
    t.secret_hash = HashTokenSecret(*secret);
    t.create_time = clock_.Now();
    t.expire_time = expire;
    auto row = store_.Create(t);
    EXPECT_TRUE(row.ok()) << row.status();
    ids_[name] = row->id;
    return *secret;
  }

  FakeClock clock_;
  InMemoryTokenStore store_;
  std::map<std::string, int64_t> ids_;
};

TEST(TokenSecretTest, SecretsAreRandomPrefixedHexAndHashedWithSha256) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto s = GenerateTokenSecret();
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(LooksLikeTokenSecret(*s)) << *s;
    EXPECT_EQ(s->size(), 3u + 64u);
    EXPECT_TRUE(seen.insert(*s).second);
  }
  // Known SHA-256 vectors.
  EXPECT_EQ(HashTokenSecret(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HashTokenSecret("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_FALSE(LooksLikeTokenSecret("jw_123"));
  EXPECT_FALSE(LooksLikeTokenSecret(std::string("jw_") + std::string(64, 'G')));
  EXPECT_FALSE(LooksLikeTokenSecret(std::string("xx_") + std::string(64, 'a')));
}

TEST(RoleTest, NamesAndNumbersAreStable) {
  // The numbers never change (4, a retired internal role, is not reused).
  EXPECT_EQ(static_cast<int>(Role::kAdmin), 0);
  EXPECT_EQ(static_cast<int>(Role::kOperator), 1);
  EXPECT_EQ(static_cast<int>(Role::kViewer), 2);
  EXPECT_EQ(static_cast<int>(Role::kExecutor), 3);
  for (Role r : {Role::kAdmin, Role::kOperator, Role::kViewer, Role::kExecutor}) {
    EXPECT_EQ(RoleFromName(RoleName(r)), r);
  }
  EXPECT_EQ(RoleName(Role::kExecutor), "EXECUTOR");
  EXPECT_FALSE(RoleFromName("CLUSTER").has_value());
  EXPECT_FALSE(RoleFromName("admin").has_value());
  EXPECT_FALSE(RoleFromName("").has_value());
}

TEST_F(TokenAuthTest, BootstrapTokensResolveToTheirRoles) {
  TokenAuthenticator auth(Options(), &store_, clock_);
  auto admin = auth.Authenticate(Bearer(kAdmin));
  ASSERT_TRUE(admin.ok()) << admin.status();
  EXPECT_EQ(admin->role, Role::kAdmin);
  EXPECT_TRUE(IsAdmin(*admin));
  auto executor = auth.Authenticate(Bearer(kExecutor));
  ASSERT_TRUE(executor.ok());
  EXPECT_EQ(executor->role, Role::kExecutor);
  EXPECT_TRUE(CanServeApp(*executor, "any-app"));
  EXPECT_FALSE(CanReadApp(*executor, "any-app"));
  // Bootstrap tokens never touch the store.
  EXPECT_EQ(store_.lookups(), 0);
}

// Authorize: a valid token of a role the service does not take is refused like no token.
TEST_F(TokenAuthTest, AuthorizeRequiresOneOfTheRoles) {
  TokenAuthenticator auth(Options(), &store_, clock_);
  auto executor = auth.Authorize(Bearer(kExecutor), {Role::kExecutor}, "Svc/Call");
  ASSERT_TRUE(executor.ok()) << executor.status();
  EXPECT_EQ(executor->role, Role::kExecutor);
  auto admin = auth.Authorize(Bearer(kAdmin), {Role::kExecutor}, "Svc/Call");
  EXPECT_EQ(admin.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(absl::StrContains(admin.status().message(), "Svc/Call")) << admin.status();
  EXPECT_EQ(auth.Authorize(absl::nullopt, {Role::kExecutor}, "Svc/Call").status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(TokenAuthTest, MissingMalformedAndUnknownTokensAreUnauthenticated) {
  TokenAuthenticator auth(Options(), &store_, clock_);
  EXPECT_EQ(auth.Authenticate(absl::optional<std::string>()).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Authenticate(std::string(kAdmin)).status().code(),
            absl::StatusCode::kUnauthenticated);  // No "Bearer ".
  EXPECT_EQ(auth.Authenticate(std::string("Bearer ")).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Authenticate(Bearer("nope")).status().code(), absl::StatusCode::kUnauthenticated);
  // A prefix of a bootstrap token is not the token.
  EXPECT_EQ(auth.Authenticate(Bearer(std::string(kAdmin).substr(0, 10))).status().code(),
            absl::StatusCode::kUnauthenticated);
  // Junk never reaches the store; a well-formed unknown secret does.
  EXPECT_EQ(store_.lookups(), 0);
  auto unknown = GenerateTokenSecret();
  EXPECT_EQ(auth.Authenticate(Bearer(*unknown)).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(store_.lookups(), 1);
}

TEST_F(TokenAuthTest, ApiTokensCarryRoleAndApps) {
  TokenAuthenticator auth(Options(), &store_, clock_);
  const std::string op = Create("ops-demo", Role::kOperator, {"demo", "billing"});
  auto p = auth.Authenticate(Bearer(op));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->role, Role::kOperator);
  EXPECT_EQ(p->name, "ops-demo");
  EXPECT_EQ(p->token_id, ids_["ops-demo"]);
  EXPECT_TRUE(CanWriteApp(*p, "demo"));
  EXPECT_TRUE(CanReadApp(*p, "billing"));
  EXPECT_FALSE(CanWriteApp(*p, "other"));
  EXPECT_FALSE(CanReadApp(*p, "other"));
  EXPECT_FALSE(IsAdmin(*p));
  EXPECT_FALSE(CanServeApp(*p, "demo"));
  ASSERT_TRUE(ReadableApps(*p).has_value());
  EXPECT_EQ(*ReadableApps(*p), (std::vector<std::string>{"demo", "billing"}));

  const std::string viewer = Create("viewer-all", Role::kViewer, {"*"});
  auto v = auth.Authenticate(Bearer(viewer));
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(CanReadApp(*v, "anything"));
  EXPECT_FALSE(CanWriteApp(*v, "anything"));
  EXPECT_FALSE(ReadableApps(*v).has_value());

  // An empty list (e.g. a VIEWER stored before "*" existed) reads no app.
  const std::string none = Create("viewer-none", Role::kViewer, {});
  auto n = auth.Authenticate(Bearer(none));
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->all_apps);
  EXPECT_FALSE(CanReadApp(*n, "demo"));
  ASSERT_TRUE(ReadableApps(*n).has_value());
  EXPECT_TRUE(ReadableApps(*n)->empty());

  const std::string op_all = Create("ops-all", Role::kOperator, {"*"});
  auto oa = auth.Authenticate(Bearer(op_all));
  ASSERT_TRUE(oa.ok());
  EXPECT_TRUE(CanWriteApp(*oa, "anything"));
  EXPECT_FALSE(IsAdmin(*oa));

  // "*" is no wildcard for executors (CreateToken refuses it; a stored one is a plain name).
  const std::string exec_star = Create("exec-star", Role::kExecutor, {"*"});
  auto es = auth.Authenticate(Bearer(exec_star));
  ASSERT_TRUE(es.ok());
  EXPECT_FALSE(CanServeApp(*es, "demo"));

  const std::string exec = Create("exec-demo", Role::kExecutor, {"demo"});
  auto e = auth.Authenticate(Bearer(exec));
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(CanServeApp(*e, "demo"));
  EXPECT_FALSE(CanServeApp(*e, "other"));
  EXPECT_FALSE(CanReadApp(*e, "demo"));

  absl::Status denied = PermissionDenied(*p, "job 7", "OPERATOR of app other");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(denied.message(), "ops-demo")) << denied.message();
  EXPECT_TRUE(absl::StrContains(denied.message(), "demo, billing")) << denied.message();
  EXPECT_EQ(RequireRole(*e, {Role::kAdmin, Role::kOperator}, "JobAdminService").code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(RequireRole(*p, {Role::kAdmin, Role::kOperator}, "JobAdminService").ok());
}

TEST_F(TokenAuthTest, RevocationTakesEffectWhenTheCacheEntryExpires) {
  TokenAuthenticator::Options o = Options();
  o.cache_ttl = absl::Seconds(3);
  TokenAuthenticator auth(o, &store_, clock_);
  const std::string op = Create("ops", Role::kOperator, {"demo"});
  ASSERT_TRUE(auth.Authenticate(Bearer(op)).ok());
  ASSERT_TRUE(auth.Authenticate(Bearer(op)).ok());
  EXPECT_EQ(store_.lookups(), 1);  // Cached.
  ASSERT_TRUE(store_.Revoke(ids_["ops"], clock_.Now()).ok());
  clock_.Advance(absl::Seconds(2));
  EXPECT_TRUE(auth.Authenticate(Bearer(op)).ok());  // Still cached: at most cache_ttl late.
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(auth.Authenticate(Bearer(op)).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(store_.lookups(), 2);
}

TEST_F(TokenAuthTest, NegativeResultsAreCachedBriefly) {
  TokenAuthenticator::Options o = Options();
  o.negative_cache_ttl = absl::Seconds(1);
  TokenAuthenticator auth(o, &store_, clock_);
  auto unknown = GenerateTokenSecret();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(auth.Authenticate(Bearer(*unknown)).status().code(),
              absl::StatusCode::kUnauthenticated);
  }
  EXPECT_EQ(store_.lookups(), 1);
  clock_.Advance(absl::Seconds(1));
  EXPECT_FALSE(auth.Authenticate(Bearer(*unknown)).ok());
  EXPECT_EQ(store_.lookups(), 2);
}

TEST_F(TokenAuthTest, ExpiredTokensAreRefusedEvenWhenCached) {
  TokenAuthenticator auth(Options(), &store_, clock_);
  const std::string op =
      Create("short", Role::kViewer, {"demo"}, clock_.Now() + absl::Milliseconds(500));
  ASSERT_TRUE(auth.Authenticate(Bearer(op)).ok());
  clock_.Advance(absl::Milliseconds(500));
  auto expired = auth.Authenticate(Bearer(op));
  EXPECT_EQ(expired.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(absl::StrContains(expired.status().message(), "expired"));
}

TEST_F(TokenAuthTest, StoreOutageIsUnavailableButBootstrapTokensStillWork) {
  TokenAuthenticator auth(Options(), &store_, clock_);
  const std::string op = Create("ops", Role::kOperator, {"demo"});
  store_.set_available(false);
  EXPECT_EQ(auth.Authenticate(Bearer(op)).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(auth.Authenticate(Bearer(kAdmin)).ok());
}

TEST_F(TokenAuthTest, WithoutAStoreOnlyBootstrapTokensWork) {
  TokenAuthenticator auth(Options(), nullptr, clock_);
  const std::string op = Create("ops", Role::kOperator, {"demo"});
  EXPECT_EQ(auth.Authenticate(Bearer(op)).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(auth.Authenticate(Bearer(kExecutor)).ok());
}

TEST_F(TokenAuthTest, InsecureDevIsAnAdminForEverything) {
  TokenAuthenticator::Options o;
  o.insecure_dev = true;
  TokenAuthenticator auth(o, nullptr, clock_);
  auto p = auth.Authenticate(absl::optional<std::string>());
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->insecure_dev);
  EXPECT_TRUE(IsAdmin(*p));
  EXPECT_TRUE(CanServeApp(*p, "demo"));
  EXPECT_TRUE(RequireRole(*p, {Role::kExecutor}, "ExecutorService").ok());
}

TEST_F(TokenAuthTest, CacheIsBounded) {
  TokenAuthenticator::Options o = Options();
  o.max_cache_entries = 4;
  o.max_negative_cache_entries = 4;
  TokenAuthenticator auth(o, &store_, clock_);
  for (int i = 0; i < 20; ++i) (void)auth.Authenticate(Bearer(*GenerateTokenSecret()));
  EXPECT_EQ(store_.lookups(), 20);
  const std::string op = Create("ops", Role::kOperator, {"demo"});
  EXPECT_TRUE(auth.Authenticate(Bearer(op)).ok());
}

TEST_F(TokenAuthTest, JunkCannotEvictValidTokensFromTheCache) {
  TokenAuthenticator::Options o = Options();
  o.max_cache_entries = 4;
  o.max_negative_cache_entries = 4;
  TokenAuthenticator auth(o, &store_, clock_);
  const std::string op = Create("ops", Role::kOperator, {"demo"});
  ASSERT_TRUE(auth.Authenticate(Bearer(op)).ok());
  for (int i = 0; i < 50; ++i) (void)auth.Authenticate(Bearer(*GenerateTokenSecret()));
  const int before = store_.lookups();
  EXPECT_TRUE(auth.Authenticate(Bearer(op)).ok());
  EXPECT_EQ(store_.lookups(), before);  // Still cached.
}

TEST_F(TokenAuthTest, FailedAuthenticationsAreRateLimitedPerPeerWithoutLookups) {
  TokenAuthenticator::Options o = Options();
  o.failed_auth.burst = 5;
  o.failed_auth.per_second = 1;
  TokenAuthenticator auth(o, &store_, clock_);
  const std::string op = Create("ops", Role::kOperator, {"demo"});
  ASSERT_TRUE(auth.Authenticate(Bearer(op), "ipv4:10.0.0.9").ok());  // Seen valid.
  const std::string peer = "ipv4:10.0.0.1";
  int unauthenticated = 0, exhausted = 0;
  for (int i = 0; i < 100; ++i) {
    absl::StatusCode code = auth.Authenticate(Bearer(*GenerateTokenSecret()), peer).status().code();
    if (code == absl::StatusCode::kUnauthenticated) ++unauthenticated;
    if (code == absl::StatusCode::kResourceExhausted) ++exhausted;
  }
  EXPECT_EQ(unauthenticated, 5);
  EXPECT_EQ(exhausted, 95);
  EXPECT_EQ(store_.lookups(), 1 + 5);  // The valid token once, then the burst; no more.
  EXPECT_EQ(auth.stats().lookups, 6);
  EXPECT_EQ(auth.stats().rate_limited, 95);
  EXPECT_EQ(auth.stats().failures, 5);
  // Non-API-shaped junk and missing headers count too, and are refused the same way.
  EXPECT_EQ(auth.Authenticate(Bearer("junk"), peer).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(auth.Authenticate(absl::nullopt, peer).status().code(),
            absl::StatusCode::kResourceExhausted);

  // Over the limit, tokens the authenticator knows keep working: bootstrap tokens, and an API
  // token seen valid, even when its cache entry is stale and must be refreshed.
  EXPECT_TRUE(auth.Authenticate(Bearer(kAdmin), peer).ok());
  clock_.Advance(absl::Milliseconds(900));
  EXPECT_FALSE(auth.Authenticate(Bearer(*GenerateTokenSecret()), peer).ok());
  EXPECT_EQ(store_.lookups(), 6);
  clock_.Advance(absl::Seconds(10));  // Past cache_ttl; the bucket is full again too.
  EXPECT_TRUE(auth.Authenticate(Bearer(op), peer).ok());
  EXPECT_EQ(store_.lookups(), 7);
  // Other peers are not affected.
  EXPECT_EQ(auth.Authenticate(Bearer(*GenerateTokenSecret()), "ipv4:10.0.0.2").status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(TokenAuthTest, ASeenValidTokenIsRefreshedForAPeerOverItsLimit) {
  TokenAuthenticator::Options o = Options();
  o.failed_auth.burst = 1;
  o.failed_auth.per_second = 0.001;
  TokenAuthenticator auth(o, &store_, clock_);
  const std::string op = Create("ops", Role::kOperator, {"demo"});
  const std::string peer = "ipv4:10.0.0.1";
  ASSERT_TRUE(auth.Authenticate(Bearer(op), peer).ok());
  (void)auth.Authenticate(Bearer(*GenerateTokenSecret()), peer);  // Spends the burst.
  ASSERT_EQ(auth.Authenticate(Bearer(*GenerateTokenSecret()), peer).status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(store_.Revoke(ids_["ops"], clock_.Now()).ok());
  clock_.Advance(absl::Seconds(3));
  // Looked up again (revocation still works), then refused as limited from now on.
  const int before = store_.lookups();
  EXPECT_EQ(auth.Authenticate(Bearer(op), peer).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(store_.lookups(), before + 1);
}

TEST_F(TokenAuthTest, AFrontEndWithAValidTokenGivesEachClientItsOwnFailureBudget) {
  TokenAuthenticator::Options o = Options();
  o.failed_auth.burst = 5;
  o.failed_auth.per_second = 0.001;
  TokenAuthenticator auth(o, &store_, clock_);
  const std::string proxy = Bearer(Create("console", Role::kViewer, {}));
  const std::string console = "ipv4:10.0.0.1";
  EXPECT_EQ(auth.LimitKey({}, console), console);
  EXPECT_EQ(auth.LimitKey({proxy, ""}, console), console);
  EXPECT_EQ(auth.LimitKey({absl::nullopt, "10.1.1.1"}, console), console);
  EXPECT_EQ(auth.LimitKey({proxy, "10.1.1.1\nforged"}, console), console);
  EXPECT_EQ(auth.LimitKey({proxy, "not-an-ip"}, console), console);
  const std::string attacker = auth.LimitKey({proxy, "10.1.1.1"}, console);
  const std::string user = auth.LimitKey({proxy, "2001:db8::7"}, console);
  EXPECT_EQ(attacker, "10.1.1.1 via ipv4:10.0.0.1");
  EXPECT_EQ(user, "2001:db8::7 via ipv4:10.0.0.1");

  // A junk flood forwarded for one client exhausts only that client's budget.
  for (int i = 0; i < 50; ++i) (void)auth.Authenticate(Bearer(*GenerateTokenSecret()), attacker);
  EXPECT_EQ(auth.Authenticate(Bearer(*GenerateTokenSecret()), attacker).status().code(),
            absl::StatusCode::kResourceExhausted);
  const std::string fresh = Create("fresh", Role::kViewer, {"demo"});
  EXPECT_TRUE(auth.Authenticate(Bearer(fresh), user).ok());
  EXPECT_EQ(auth.Authenticate(Bearer(*GenerateTokenSecret()), console).status().code(),
            absl::StatusCode::kUnauthenticated);

  // Naming clients takes a valid token: a junk proxy token is the peer's own failure.
  const int64_t failures = auth.stats().failures;
  EXPECT_EQ(auth.LimitKey({Bearer(*GenerateTokenSecret()), "10.2.2.2"}, console), console);
  EXPECT_EQ(auth.stats().failures, failures + 1);
}

}  // namespace
}  // namespace jobwheel
