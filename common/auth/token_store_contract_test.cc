// The TokenStore contract, run against the fake (InMemoryTokenStore, which the authenticator's
// and the token admin's unit tests use) and the real store (PgTokenStore on a fresh database):
// the same cases, so the fake cannot drift from PostgreSQL. What only PostgreSQL can show (no
// secret in any table, a row with a role of no Role) stays in pg_token_store_test.

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/auth/in_memory_token_store.h"
#include "common/auth/pg_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/auth/token_test_data.h"
#include "common/pg/pg_audit_log.h"
#include "common/testing/pg_store_test.h"
#include "common/testing/store_contract.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"

namespace jobwheel {
namespace {

// Each environment: the store, and the audit events its writes recorded, oldest first.
class InMemoryEnv {
 public:
  static constexpr char kName[] = "InMemory";
  TokenStore& store() { return store_; }
  std::vector<jobwheel::v1::AuditEvent> Audits() { return store_.audits(); }

 private:
  InMemoryTokenStore store_;
};

class PgEnv : public testing::PgStoreEnv<PgTokenStore> {
 public:
  std::vector<jobwheel::v1::AuditEvent> Audits() {
    pqxx::connection conn(db_->dsn());
    pqxx::work tx(conn);
    std::vector<jobwheel::v1::AuditEvent> events = SelectAuditEvents(tx, {}, 0, 100);
    return {events.rbegin(), events.rend()};  // Newest first there.
  }
};

using store_testing::Token;

template <typename Env>
class TokenStoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (std::is_same_v<Env, PgEnv>) {
      ASSERT_TRUE(env_.ok());
    }
  }
  TokenStore& store() { return env_.store(); }

  Env env_;
};

using Envs = ::testing::Types<InMemoryEnv, PgEnv>;
TYPED_TEST_SUITE(TokenStoreContractTest, Envs, ::jobwheel::testing::StoreEnvNames);

TYPED_TEST(TokenStoreContractTest, CreateFindListRevoke) {
  const std::string secret = *GenerateTokenSecret();
  NewToken nt = Token("ops-demo", Role::kOperator, {"demo", "billing"}, secret);
  nt.expire_time = absl::FromUnixSeconds(1800000000);
  auto row = this->store().Create(nt);
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_GT(row->id, 0);
  EXPECT_EQ(row->name, "ops-demo");
  EXPECT_EQ(row->role, Role::kOperator);
  EXPECT_EQ(row->apps, (std::vector<std::string>{"demo", "billing"}));
  EXPECT_EQ(row->create_time, absl::FromUnixSeconds(1700000000));
  ASSERT_TRUE(row->expire_time.has_value());
  EXPECT_EQ(*row->expire_time, absl::FromUnixSeconds(1800000000));
  EXPECT_FALSE(row->revoke_time.has_value());
  EXPECT_FALSE(row->last_used_time.has_value());

  auto found = this->store().FindActive(HashTokenSecret(secret));
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->id, row->id);
  EXPECT_EQ((*found)->name, "ops-demo");
  EXPECT_EQ((*found)->role, Role::kOperator);
  EXPECT_EQ((*found)->apps, row->apps);
  ASSERT_TRUE((*found)->expire_time.has_value());
  EXPECT_EQ(*(*found)->expire_time, absl::FromUnixSeconds(1800000000));
  auto missing = this->store().FindActive(HashTokenSecret(*GenerateTokenSecret()));
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());

  auto listed = this->store().List(false);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].id, row->id);

  auto revoked = this->store().Revoke(row->id, absl::FromUnixSeconds(1700000100));
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(*revoked->revoke_time, absl::FromUnixSeconds(1700000100));
  // Idempotent: the first revoke time stays.
  revoked = this->store().Revoke(row->id, absl::FromUnixSeconds(1700000200));
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(*revoked->revoke_time, absl::FromUnixSeconds(1700000100));
  found = this->store().FindActive(HashTokenSecret(secret));
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  EXPECT_TRUE(this->store().List(false)->empty());
  ASSERT_EQ(this->store().List(true)->size(), 1u);
  EXPECT_EQ((*this->store().List(true))[0].revoke_time, absl::FromUnixSeconds(1700000100));
  EXPECT_EQ(this->store().Revoke(999, absl::FromUnixSeconds(1700000300)).status().code(),
            absl::StatusCode::kNotFound);
}

TYPED_TEST(TokenStoreContractTest, ListsByIdRevokedOnlyWhenAsked) {
  std::vector<int64_t> ids;
  for (const char* name : {"a", "b", "c"}) {
    auto row = this->store().Create(Token(name, Role::kViewer, {}, *GenerateTokenSecret()));
    ASSERT_TRUE(row.ok()) << row.status();
    ids.push_back(row->id);
  }
  ASSERT_TRUE(this->store().Revoke(ids[1], absl::FromUnixSeconds(1700000100)).ok());
  auto live = this->store().List(false);
  ASSERT_TRUE(live.ok());
  ASSERT_EQ(live->size(), 2u);
  EXPECT_EQ((*live)[0].id, ids[0]);
  EXPECT_EQ((*live)[1].id, ids[2]);
  auto all = this->store().List(true);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ((*all)[i].id, ids[i]);
}

TYPED_TEST(TokenStoreContractTest, NamesAreUniqueAmongLiveTokens) {
  auto a = this->store().Create(Token("ci", Role::kViewer, {}, *GenerateTokenSecret()));
  ASSERT_TRUE(a.ok());
  auto dup = this->store().Create(Token("ci", Role::kViewer, {}, *GenerateTokenSecret()));
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(absl::StrContains(dup.status().message(), "name")) << dup.status();
  ASSERT_TRUE(this->store().Revoke(a->id, absl::FromUnixSeconds(1700000100)).ok());
  EXPECT_TRUE(this->store().Create(Token("ci", Role::kViewer, {}, *GenerateTokenSecret())).ok());
}

TYPED_TEST(TokenStoreContractTest, AuditedWritesRecordTheirEventAndFailedOnesNone) {
  jobwheel::v1::AuditEvent audit;
  audit.set_actor_token_id(7);
  audit.set_actor_name("alice-admin");
  audit.set_action("CreateToken");
  audit.set_peer("ipv4:10.0.0.9:4242");
  audit.set_request_id("req-1");
  auto row = this->store().Create(
      Token("exec-demo", Role::kExecutor, {"demo"}, *GenerateTokenSecret()), &audit);
  ASSERT_TRUE(row.ok()) << row.status();
  // A failed create (the name is taken) records nothing.
  EXPECT_EQ(this->store()
                .Create(Token("exec-demo", Role::kViewer, {}, *GenerateTokenSecret()), &audit)
                .status()
                .code(),
            absl::StatusCode::kAlreadyExists);
  audit.set_action("RevokeToken");
  ASSERT_TRUE(this->store().Revoke(row->id, absl::FromUnixSeconds(1700000100), &audit).ok());
  // A repeated revoke and one of no token record nothing.
  ASSERT_TRUE(this->store().Revoke(row->id, absl::FromUnixSeconds(1700000200), &audit).ok());
  EXPECT_EQ(this->store().Revoke(999, absl::FromUnixSeconds(1700000300), &audit).status().code(),
            absl::StatusCode::kNotFound);
  // An unaudited write records nothing either.
  ASSERT_TRUE(this->store().Create(Token("quiet", Role::kViewer, {}, *GenerateTokenSecret())).ok());

  const std::vector<jobwheel::v1::AuditEvent> events = this->env_.Audits();
  ASSERT_EQ(events.size(), 2u);
  const jobwheel::v1::AuditEvent& create = events[0];
  const jobwheel::v1::AuditEvent& revoke = events[1];
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
  EXPECT_EQ(revoke.target(), absl::StrCat("token ", row->id));
  ASSERT_EQ(revoke.changes_size(), 1) << revoke.DebugString();
  EXPECT_EQ(revoke.changes(0).field(), "revoke_time");
  EXPECT_EQ(revoke.changes(0).before(), "");
  EXPECT_EQ(revoke.changes(0).after(), "2023-11-14T22:15:00Z");
}

}  // namespace
}  // namespace jobwheel
