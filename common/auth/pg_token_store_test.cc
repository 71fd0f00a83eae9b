// PgTokenStore on the real test PostgreSQL, what the fake cannot show: only hashes are stored
// (in tokens and in audit events), FindActive stamps last_used_time, a row with a role of no
// Role is refused. The rest of the contract (names, revocation, audited writes) is in
// token_store_contract_test, on the fake and here.
#include "common/auth/pg_token_store.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "common/auth/token_authenticator.h"
#include "common/auth/token_test_data.h"
#include "common/pg/pg_audit_log.h"
#include "common/pg/pg_pool.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"

namespace jobwheel {
namespace {

using store_testing::Token;

class PgTokenStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    pool_ = std::make_unique<PgPool>(dsn_, 2);
    store_ = std::make_unique<PgTokenStore>(*pool_);
  }

  std::string dsn_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgTokenStore> store_;
};

// The audited writes' events themselves are checked on the fake and here in
// token_store_contract_test; what only the table can show is that they hold no secret.
TEST_F(PgTokenStoreTest, AuditEventsHoldNeitherTheSecretNorItsHash) {
  jobwheel::v1::AuditEvent audit;
  audit.set_actor_name("alice-admin");
  audit.set_action("CreateToken");
  const std::string secret = *GenerateTokenSecret();
  auto row = store_->Create(Token("exec-demo", Role::kExecutor, {"demo"}, secret), &audit);
  ASSERT_TRUE(row.ok()) << row.status();
  audit.set_action("RevokeToken");
  ASSERT_TRUE(store_->Revoke(row->id, absl::FromUnixSeconds(1700000100), &audit).ok());

  pqxx::connection conn(dsn_);
  pqxx::work tx(conn);
  ASSERT_EQ(SelectAuditEvents(tx, {}, 0, 10).size(), 2u);
  for (const std::string& needle : {secret, HashTokenSecret(secret), secret.substr(3)}) {
    EXPECT_EQ(tx.exec_params1("SELECT count(*) FROM audit_events a WHERE strpos(a::text, $1) > 0",
                              needle)[0]
                  .as<int>(),
              0);
  }
}

TEST_F(PgTokenStoreTest, FindActiveStampsLastUsedTime) {
  const std::string secret = *GenerateTokenSecret();
  auto row = store_->Create(Token("ops-demo", Role::kOperator, {"demo"}, secret));
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_FALSE(row->last_used_time.has_value());
  auto found = store_->FindActive(HashTokenSecret(secret));
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  auto listed = store_->List(false);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_TRUE((*listed)[0].last_used_time.has_value());  // Stamped by FindActive.
}

TEST_F(PgTokenStoreTest, NoSecretIsStored) {
  const std::string secret = *GenerateTokenSecret();
  ASSERT_TRUE(store_->Create(Token("exec", Role::kExecutor, {"demo"}, secret)).ok());
  pqxx::connection conn(dsn_);
  pqxx::work tx(conn);
  pqxx::result r = tx.exec("SELECT row_to_json(t)::text, secret_hash FROM tokens t");
  ASSERT_EQ(r.size(), 1u);
  const std::string row = r[0][0].as<std::string>();
  EXPECT_FALSE(absl::StrContains(row, secret.substr(3))) << row;
  EXPECT_EQ(r[0][1].as<std::string>(), HashTokenSecret(secret));
  // The schema refuses anything but a hex SHA-256 in secret_hash.
  EXPECT_THROW(tx.exec("INSERT INTO tokens (name, role, secret_hash) VALUES "
                       "('x', 'ADMIN', 'plaintext-secret')"),
               pqxx::check_violation);
}

// The schema admits only the four roles; a row that names another (the retired CLUSTER, in a
// table changed by hand) is refused clearly: never read as another role, never a crash.
TEST_F(PgTokenStoreTest, ARowWithAnUnknownRoleIsRefused) {
  const std::string secret = *GenerateTokenSecret();
  auto row = store_->Create(Token("old-cluster", Role::kViewer, {"*"}, secret));
  ASSERT_TRUE(row.ok()) << row.status();
  {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    EXPECT_THROW(tx.exec("UPDATE tokens SET role = 'CLUSTER'"), pqxx::check_violation);
  }
  {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    tx.exec("ALTER TABLE tokens DROP CONSTRAINT tokens_role_check");
    tx.exec("UPDATE tokens SET role = 'CLUSTER'");
    tx.commit();
  }
  auto found = store_->FindActive(HashTokenSecret(secret));
  EXPECT_EQ(found.status().code(), absl::StatusCode::kUnauthenticated) << found.status();
  EXPECT_TRUE(absl::StrContains(found.status().message(), "old-cluster")) << found.status();
  EXPECT_TRUE(absl::StrContains(found.status().message(), "\"CLUSTER\"")) << found.status();

  // The authenticator refuses it with that reason, as a failed authentication.
  FakeClock clock;
  TokenAuthenticator auth(TokenAuthenticator::Options(), store_.get(), clock);
  auto p = auth.AuthenticateToken(secret, "ipv4:10.0.0.1");
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnauthenticated) << p.status();
  EXPECT_TRUE(absl::StrContains(p.status().message(), "CLUSTER")) << p.status();
  EXPECT_EQ(auth.stats().failures, 1);

  // Admin reads name the row; a revoke changes nothing on a row this version cannot read.
  auto listed = store_->List(false);
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kFailedPrecondition) << listed.status();
  EXPECT_TRUE(absl::StrContains(listed.status().message(), "old-cluster")) << listed.status();
  auto revoked = store_->Revoke(row->id, absl::FromUnixSeconds(1700000100));
  EXPECT_EQ(revoked.status().code(), absl::StatusCode::kFailedPrecondition) << revoked.status();
  pqxx::connection conn(dsn_);
  pqxx::work tx(conn);
  EXPECT_TRUE(tx.exec1("SELECT revoke_time FROM tokens")[0].is_null());
}

}  // namespace
}  // namespace jobwheel
