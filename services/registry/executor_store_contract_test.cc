// The ExecutorStore contract, run against the fake (InMemoryExecutorStore, which the registry's
// unit tests use) and the real store (PgExecutorStore on a fresh database): the same cases, so
// the fake cannot drift from PostgreSQL.

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "common/model/instance_tag.h"
#include "common/testing/pg_store_test.h"
#include "common/testing/store_contract.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "services/registry/executor_test_data.h"
#include "services/registry/in_memory_executor_store.h"
#include "services/registry/pg_executor_store.h"

namespace jobwheel::registry {
namespace {

// Each environment: the store, apps made as an admin makes them, and time passing for the
// store's leases.
class InMemoryEnv {
 public:
  static constexpr char kName[] = "InMemory";
  ExecutorStore& store() { return store_; }
  void AddApp(const AppConfig& app) { store_.SetApp(app); }
  void PassTime(absl::Duration d) { clock_.Advance(d); }

 private:
  SimulatedClock clock_;
  InMemoryExecutorStore store_{clock_};
};

class PgEnv : public testing::PgStoreEnv<PgExecutorStore> {
 public:
  PgEnv() : PgStoreEnv(4) {}
  void AddApp(const AppConfig& app) {
    std::string addresses;
    for (const std::string& a : app.manual_addresses) {
      addresses += (addresses.empty() ? "\"" : ",\"") + a + "\"";
    }
    db_->Exec("INSERT INTO apps (name, address_type, manual_addresses) VALUES ('" + app.name +
              "', '" + (app.address_type == v1::ADDRESS_TYPE_MANUAL ? "MANUAL" : "AUTO") + "', '{" +
              addresses + "}')");
  }
  // The database's clock cannot be moved: the leases are moved back instead.
  void PassTime(absl::Duration d) {
    db_->Exec("UPDATE executors SET lease_until = lease_until - interval '" +
              std::to_string(absl::ToInt64Milliseconds(d)) + " milliseconds'");
  }
};

using store_testing::Exec;
using store_testing::kX;
using store_testing::kY;

constexpr absl::Duration kLease = absl::Seconds(10);

template <typename Env>
class ExecutorStoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (std::is_same_v<Env, PgEnv>) {
      ASSERT_TRUE(env_.ok());
    }
    env_.AddApp(AppConfig{"demo", v1::ADDRESS_TYPE_AUTO, {}});
    env_.AddApp(AppConfig{"other", v1::ADDRESS_TYPE_AUTO, {}});
  }
  ExecutorStore& store() { return env_.store(); }
  size_t OnlineCount() {
    auto online = store().ListOnline();
    EXPECT_TRUE(online.ok()) << online.status();
    return online.ok() ? online->size() : 0;
  }

  Env env_;
};

using Envs = ::testing::Types<InMemoryEnv, PgEnv>;
TYPED_TEST_SUITE(ExecutorStoreContractTest, Envs, ::jobwheel::testing::StoreEnvNames);

TYPED_TEST(ExecutorStoreContractTest, RegisterRoundTrips) {
  auto stored = this->store().Register(Exec("demo", "10.0.0.1:7200"), "r1", "s1", kLease);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->registry_replica(), "r1");
  EXPECT_GT(stored->register_time().seconds(), 0);
  auto online = this->store().ListOnline();
  ASSERT_TRUE(online.ok()) << online.status();
  ASSERT_EQ(online->size(), 1u);
  const v1::Executor& e = (*online)[0];
  EXPECT_EQ(e.app(), "demo");
  EXPECT_EQ(e.address(), "10.0.0.1:7200");
  ASSERT_EQ(e.handlers_size(), 2);
  EXPECT_EQ(e.handlers(1), "with \"quote\" and \\ back,slash");
  EXPECT_EQ(e.labels().at("team"), "a \"b\"");
  EXPECT_EQ(e.capacity(), 8);
  EXPECT_EQ(e.sdk_version(), "cpp-0.1");
  EXPECT_TRUE(e.allow_scripts());
  EXPECT_EQ(e.registry_replica(), "r1");
  EXPECT_EQ(e.register_time().seconds(), stored->register_time().seconds());
  auto apps = this->store().ListAppConfigs();
  ASSERT_TRUE(apps.ok());
  EXPECT_EQ(apps->size(), 2u);  // A registration makes no app.
}

TYPED_TEST(ExecutorStoreContractTest, RefusesAnUnknownAppAndWritesNothing) {
  auto refused = this->store().Register(Exec("nobody-made-me", "h:1"), "r1", "s1", kLease);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_TRUE(absl::StartsWith(refused.status().message(), "register.app: ")) << refused.status();
  EXPECT_EQ(this->OnlineCount(), 0u);
  EXPECT_EQ(this->store().ListAppConfigs()->size(), 2u);
}

TYPED_TEST(ExecutorStoreContractTest, PublishesTheInstanceTagNeverTheInstanceId) {
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "r1", "s1", kLease, kX).ok());
  auto online = this->store().ListOnline();
  ASSERT_TRUE(online.ok());
  ASSERT_EQ(online->size(), 1u);
  EXPECT_EQ((*online)[0].instance(), InstanceTag(kX));
  EXPECT_EQ((*online)[0].instance().find("instance-x"), std::string::npos);
}

TYPED_TEST(ExecutorStoreContractTest, OnlyTheOwningSessionTakesARowOffline) {
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "r1", "s1", kLease, kX).ok());
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "r2", "s2", kLease, kX).ok());
  auto stale = this->store().MarkOffline({{"demo", "h:1"}, "s1"});
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(*stale);
  EXPECT_EQ(this->store().GetOnline({{"demo", "h:1"}})->size(), 1u);
  auto current = this->store().MarkOffline({{"demo", "h:1"}, "s2"});
  ASSERT_TRUE(current.ok());
  EXPECT_TRUE(*current);
  EXPECT_TRUE(this->store().GetOnline({{"demo", "h:1"}})->empty());
  EXPECT_FALSE(*this->store().MarkOffline({{"demo", "h:1"}, "s2"}));
}

TYPED_TEST(ExecutorStoreContractTest, AnotherInstanceCannotReplaceAnOnlineRow) {
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "r1", "s1", kLease, kX).ok());
  auto other_app = this->store().Register(Exec("other", "h:1"), "r2", "s0", kLease, kY);
  EXPECT_EQ(other_app.status().code(), absl::StatusCode::kAlreadyExists) << other_app.status();
  EXPECT_EQ(other_app.status().message(),
            "register.address: h:1 is online for another app (demo); an address serves one app "
            "at a time");
  auto refused = this->store().Register(Exec("demo", "h:1"), "r2", "s2", kLease, kY);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists) << refused.status();
  EXPECT_EQ(refused.status().message(), "executor demo/h:1 is online with another instance");
  // Without an instance id nothing matches either.
  EXPECT_EQ(this->store().Register(Exec("demo", "h:1"), "r2", "s2", kLease).status().code(),
            absl::StatusCode::kAlreadyExists);
  auto online = this->store().GetOnline({{"demo", "h:1"}});
  ASSERT_EQ(online->size(), 1u);
  EXPECT_EQ((*online)[0].registry_replica(), "r1");

  // The same instance through another replica replaces it.
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "r2", "s3", kLease, kX).ok());
  EXPECT_EQ((*this->store().GetOnline({{"demo", "h:1"}}))[0].registry_replica(), "r2");
  // Offline: anyone.
  ASSERT_TRUE(*this->store().MarkOffline({{"demo", "h:1"}, "s3"}));
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "r1", "s4", kLease, kY).ok());
  EXPECT_EQ((*this->store().GetOnline({{"demo", "h:1"}}))[0].instance(), InstanceTag(kY));
  // Online but its lease ran out (its replica died, nobody expired it yet): anyone, and
  // another app too.
  this->env_.PassTime(kLease + absl::Seconds(1));
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "r2", "s5", kLease, kX).ok());
  this->env_.PassTime(kLease + absl::Seconds(1));
  ASSERT_TRUE(this->store().Register(Exec("other", "h:1"), "r2", "s6", kLease, kY).ok());
}

TYPED_TEST(ExecutorStoreContractTest, RenewReportsSupersededAndMissingSessions) {
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "r1", "s1", kLease).ok());
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:2"), "r1", "s2", kLease, kX).ok());
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:3"), "r1", "s3", kLease).ok());
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:2"), "r2", "s2b", kLease, kX).ok());
  ASSERT_TRUE(*this->store().MarkOffline({{"demo", "h:3"}, "s3"}));
  const absl::Time beat = absl::FromUnixSeconds(1800000000);
  auto lost = this->store().RenewLeases("r1",
                                        {{{{"demo", "h:1"}, "s1"}, beat, 3, 4},
                                         {{{"demo", "h:2"}, "s2"}, beat, 0, 0},
                                         {{{"demo", "h:3"}, "s3"}, beat, 0, 0},
                                         {{{"demo", "h:9"}, "s9"}, beat, 0, 0}},
                                        absl::Seconds(30));
  ASSERT_TRUE(lost.ok()) << lost.status();
  ASSERT_EQ(lost->size(), 3u);
  for (const LostSession& l : *lost) {
    if (l.session_id == "s2") {
      EXPECT_EQ(l.reason, LostReason::kSuperseded);
    } else {
      EXPECT_TRUE(l.session_id == "s3" || l.session_id == "s9") << l.session_id;
      EXPECT_EQ(l.reason, LostReason::kMissing) << l.session_id;
    }
  }
  auto rows = this->store().GetOnline({{"demo", "h:1"}});
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].running(), 3);
  EXPECT_EQ((*rows)[0].queued(), 4);
  EXPECT_EQ((*rows)[0].last_beat_time().seconds(), 1800000000);
  // Renewed for 30 s: still online after the first lease would have run out (h:2, which
  // nobody renewed, expires).
  this->env_.PassTime(kLease + absl::Seconds(5));
  EXPECT_EQ(*this->store().ExpireLeases(), 1);
  EXPECT_EQ(this->store().GetOnline({{"demo", "h:1"}})->size(), 1u);
}

TYPED_TEST(ExecutorStoreContractTest, RenewOfAnotherReplicasRowRenewsNothing) {
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "r1", "s1", kLease).ok());
  auto lost = this->store().RenewLeases(
      "r2", {{{{"demo", "h:1"}, "s1"}, absl::FromUnixSeconds(1800000000), 1, 1}},
      absl::Seconds(30));
  ASSERT_TRUE(lost.ok()) << lost.status();
  ASSERT_EQ(lost->size(), 1u);
  EXPECT_EQ((*lost)[0].session_id, "s1");
  this->env_.PassTime(kLease + absl::Seconds(1));
  EXPECT_EQ(*this->store().ExpireLeases(), 1);
}

TYPED_TEST(ExecutorStoreContractTest, ExpireTakesOnlyLapsedLeasesOffline) {
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "dead", "s1", kLease).ok());
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:2"), "live", "s2", absl::Hours(1)).ok());
  EXPECT_EQ(*this->store().ExpireLeases(), 0);
  this->env_.PassTime(kLease + absl::Seconds(1));
  auto n = this->store().ExpireLeases();
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  auto online = this->store().ListOnline();
  ASSERT_EQ(online->size(), 1u);
  EXPECT_EQ((*online)[0].address(), "h:2");
  EXPECT_EQ(*this->store().ExpireLeases(), 0);
  // An expired row is offline: its session can no longer take it offline.
  EXPECT_FALSE(*this->store().MarkOffline({{"demo", "h:1"}, "s1"}));
}

TYPED_TEST(ExecutorStoreContractTest, GetOnlineReturnsOnlyTheOnlineRowsAsked) {
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:1"), "r1", "s1", kLease).ok());
  ASSERT_TRUE(this->store().Register(Exec("demo", "h:2"), "r1", "s2", kLease).ok());
  ASSERT_TRUE(this->store().Register(Exec("other", "h:3"), "r1", "s3", kLease).ok());
  ASSERT_TRUE(*this->store().MarkOffline({{"demo", "h:2"}, "s2"}));
  auto got = this->store().GetOnline({{"demo", "h:1"}, {"demo", "h:2"}, {"demo", "h:9"}});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].address(), "h:1");
  EXPECT_EQ(this->OnlineCount(), 2u);
}

TYPED_TEST(ExecutorStoreContractTest, AppConfigs) {
  this->env_.AddApp(AppConfig{"m", v1::ADDRESS_TYPE_MANUAL, {"a:1", "b:2"}});
  auto got = this->store().GetAppConfigs({"m", "missing"});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].name, "m");
  EXPECT_EQ((*got)[0].address_type, v1::ADDRESS_TYPE_MANUAL);
  EXPECT_EQ((*got)[0].manual_addresses, (std::vector<std::string>{"a:1", "b:2"}));
  auto all = this->store().ListAppConfigs();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].name, "demo");
  EXPECT_EQ((*all)[0].address_type, v1::ADDRESS_TYPE_AUTO);
}

}  // namespace
}  // namespace jobwheel::registry
