#include "services/registry/token_session_credential.h"

#include <string>

#include "common/auth/in_memory_token_store.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"

namespace jobwheel::registry {
namespace {

TEST(TokenSessionCredentialTest, RevokedTokenFailsAfterTheCacheTime) {
  FakeClock clock;
  InMemoryTokenStore tokens;
  const std::string secret = *GenerateTokenSecret();
  NewToken t;
  t.name = "exec-demo";
  t.role = Role::kExecutor;
  t.apps = {"demo"};
  t.secret_hash = HashTokenSecret(secret);
  t.create_time = clock.Now();
  auto id = tokens.Create(t);
  ASSERT_TRUE(id.ok()) << id.status();
  TokenAuthenticator::Options options;
  options.executor_token = "bootstrap-executor";
  TokenAuthenticator auth(options, &tokens, clock);

  TokenSessionCredential demo(auth, "Bearer " + secret, "demo");
  TokenSessionCredential billing(auth, "Bearer " + secret, "billing");
  TokenSessionCredential bootstrap(auth, std::string("Bearer bootstrap-executor"), "billing");
  TokenSessionCredential junk(auth, std::string("Bearer nope"), "demo");
  EXPECT_TRUE(demo.Check().ok());
  EXPECT_EQ(billing.Check().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(bootstrap.Check().ok());
  EXPECT_EQ(junk.Check().code(), absl::StatusCode::kUnauthenticated);

  ASSERT_TRUE(tokens.Revoke(id->id, clock.Now()).ok());
  clock.Advance(absl::Seconds(4));  // Past the authenticator's 3 s cache.
  EXPECT_EQ(demo.Check().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(bootstrap.Check().ok());
}

}  // namespace
}  // namespace jobwheel::registry
