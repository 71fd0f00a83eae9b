// PgTokenStore on the real test PostgreSQL: only hashes are stored, names are unique among
// live tokens, revocation hides a token from lookups, audited writes record their event in
// the same transaction (never the secret or its hash; a failed write or a repeated revoke
// records none).
#include "common/auth/pg_token_store.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "common/auth/token_authenticator.h"
#include "common/pg/pg_audit_log.h"
#include "common/pg/pg_pool.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"

namespace jobwheel {
namespace {

class PgTokenStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    pool_ = std::make_unique<PgPool>(dsn_, 2);
    store_ = std::make_unique<PgTokenStore>(*pool_);
  }

  NewToken Token(const std::string& name, Role role, std::vector<std::string> apps,
                 const std::string& secret) {
    NewToken t;
    t.name = name;
    t.role = role;
    t.apps = std::move(apps);
    t.secret_hash = HashTokenSecret(secret);
    t.create_time = absl::FromUnixSeconds(1700000000);
    return t;
  }

  std::string dsn_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgTokenStore> store_;
};

TEST_F(PgTokenStoreTest, AuditedWritesRecordTheirEventInTheirTransaction) {
  jobwheel::v1::AuditEvent audit;
  audit.set_actor_token_id(7);
  audit.set_actor_name("alice-admin");
  audit.set_action("CreateToken");
  audit.set_peer("ipv4:10.0.0.9:4242");
  audit.set_request_id("req-1");
  const std::string secret = *GenerateTokenSecret();
  NewToken nt = Token("exec-demo", Role::kExecutor, {"demo"}, secret);
  auto row = store_->Create(nt, &audit);
  ASSERT_TRUE(row.ok()) << row.status();
  // A failed create (the name is taken) records nothing.
  EXPECT_EQ(store_->Create(Token("exec-demo", Role::kViewer, {}, *GenerateTokenSecret()), &audit)
                .status()
                .code(),
            absl::StatusCode::kAlreadyExists);
  audit.set_action("RevokeToken");
  ASSERT_TRUE(store_->Revoke(row->id, absl::FromUnixSeconds(1700000100), &audit).ok());
  ASSERT_TRUE(store_->Revoke(row->id, absl::FromUnixSeconds(1700000200), &audit).ok());  // No-op.
  EXPECT_EQ(store_->Revoke(999, absl::FromUnixSeconds(1700000300), &audit).status().code(),
            absl::StatusCode::kNotFound);

  pqxx::connection conn(dsn_);
  pqxx::work tx(conn);
  const std::vector<jobwheel::v1::AuditEvent> events = SelectAuditEvents(tx, {}, 0, 10);
  ASSERT_EQ(events.size(), 2u);
  const jobwheel::v1::AuditEvent& revoke = events[0];
  const jobwheel::v1::AuditEvent& create = events[1];
  EXPECT_EQ(create.action(), "CreateToken");
  EXPECT_EQ(create.target(), absl::StrCat("token ", row->id));
  EXPECT_EQ(create.actor_token_id(), 7);
  EXPECT_EQ(create.actor_name(), "alice-admin");
  EXPECT_EQ(create.peer(), "ipv4:10.0.0.9:4242");
  EXPECT_EQ(create.request_id(), "req-1");
  std::map<std::string, std::pair<std::string, std::string>> changes;
  for (const auto& c : create.changes()) changes[c.field()] = {c.before(), c.after()};
  EXPECT_EQ(changes["name"], std::make_pair(std::string(), std::string("\"exec-demo\"")));
  EXPECT_EQ(changes["role"].second, "EXECUTOR");
  EXPECT_EQ(changes["apps"].second, "\"demo\"");
  EXPECT_EQ(changes.count("revoke_time"), 0u);
  EXPECT_EQ(revoke.action(), "RevokeToken");
  ASSERT_EQ(revoke.changes_size(), 1) << revoke.DebugString();
  EXPECT_EQ(revoke.changes(0).field(), "revoke_time");
  EXPECT_EQ(revoke.changes(0).before(), "");
  EXPECT_EQ(revoke.changes(0).after(), "2023-11-14T22:15:00Z");
  // Neither the secret nor its hash is anywhere in the table.
  for (const std::string& needle : {secret, HashTokenSecret(secret), secret.substr(3)}) {
    EXPECT_EQ(tx.exec_params1("SELECT count(*) FROM audit_events a WHERE strpos(a::text, $1) > 0",
                              needle)[0]
                  .as<int>(),
              0);
  }
}

TEST_F(PgTokenStoreTest, CreateFindListRevoke) {
  const std::string secret = *GenerateTokenSecret();
  NewToken nt = Token("ops-demo", Role::kOperator, {"demo", "billing"}, secret);
  nt.expire_time = absl::FromUnixSeconds(1800000000);
  auto row = store_->Create(nt);
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_GT(row->id, 0);
  EXPECT_EQ(row->role, Role::kOperator);
  EXPECT_EQ(row->apps, (std::vector<std::string>{"demo", "billing"}));
  EXPECT_EQ(row->create_time, absl::FromUnixSeconds(1700000000));
  ASSERT_TRUE(row->expire_time.has_value());
  EXPECT_EQ(*row->expire_time, absl::FromUnixSeconds(1800000000));
  EXPECT_FALSE(row->last_used_time.has_value());

  auto found = store_->FindActive(HashTokenSecret(secret));
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->id, row->id);
  EXPECT_EQ((*found)->name, "ops-demo");
  EXPECT_EQ((*found)->apps, row->apps);
  auto missing = store_->FindActive(HashTokenSecret(*GenerateTokenSecret()));
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());

  auto listed = store_->List(false);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_TRUE((*listed)[0].last_used_time.has_value());  // Stamped by FindActive.

  auto revoked = store_->Revoke(row->id, absl::FromUnixSeconds(1700000100));
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(*revoked->revoke_time, absl::FromUnixSeconds(1700000100));
  // Idempotent: the first revoke time stays.
  revoked = store_->Revoke(row->id, absl::FromUnixSeconds(1700000200));
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(*revoked->revoke_time, absl::FromUnixSeconds(1700000100));
  found = store_->FindActive(HashTokenSecret(secret));
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  EXPECT_TRUE(store_->List(false)->empty());
  EXPECT_EQ(store_->List(true)->size(), 1u);
  EXPECT_EQ(store_->Revoke(999, RealClock::Get().Now()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(PgTokenStoreTest, NamesAreUniqueAmongLiveTokens) {
  auto a = store_->Create(Token("ci", Role::kViewer, {}, *GenerateTokenSecret()));
  ASSERT_TRUE(a.ok());
  auto dup = store_->Create(Token("ci", Role::kViewer, {}, *GenerateTokenSecret()));
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(absl::StrContains(dup.status().message(), "name")) << dup.status();
  ASSERT_TRUE(store_->Revoke(a->id, RealClock::Get().Now()).ok());
  EXPECT_TRUE(store_->Create(Token("ci", Role::kViewer, {}, *GenerateTokenSecret())).ok());
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
