#include "services/registry/pg_executor_store.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/pg/pg_pool.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "services/registry/executor_test_data.h"

namespace jobwheel::registry {
namespace {

using store_testing::Exec;
using store_testing::kX;
using store_testing::kY;

class PgExecutorStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    pool_ = std::make_unique<PgPool>(dsn_, 4);
    store_ = std::make_unique<PgExecutorStore>(*pool_);
    // Admins create apps (AppAdminService); registrations never do.
    Sql("INSERT INTO apps (name) VALUES ('demo'), ('other'), ('race')");
  }

  void Sql(const std::string& sql) {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    tx.exec(sql);
    tx.commit();
  }

  // "replica|session|instance|online" of a row ("" when missing).
  std::string Row(const std::string& app, const std::string& address) {
    pqxx::connection conn(dsn_);
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec_params(
        "SELECT replica_id || '|' || session_id || '|' || COALESCE(instance_id, '') || '|' || "
        "CASE WHEN online THEN 't' ELSE 'f' END FROM executors WHERE app = $1 AND address = $2",
        app, address);
    return r.empty() ? std::string() : r[0][0].as<std::string>();
  }

  // Waits for changes until `want` arrived or 2 s passed.
  std::vector<Change> WaitFor(ChangeFeed& feed, size_t want) {
    std::vector<Change> got;
    const absl::Time deadline = RealClock::Get().Now() + absl::Seconds(2);
    while (got.size() < want && RealClock::Get().Now() < deadline) {
      auto changes = feed.Wait(absl::Milliseconds(100));
      EXPECT_TRUE(changes.ok()) << changes.status();
      if (!changes.ok()) break;
      got.insert(got.end(), changes->begin(), changes->end());
    }
    return got;
  }

  std::string dsn_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgExecutorStore> store_;
};

TEST_F(PgExecutorStoreTest, RegisterRoundTrips) {
  auto stored = store_->Register(Exec("demo", "10.0.0.1:7200"), "r1", "s1", absl::Seconds(10));
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->registry_replica(), "r1");
  EXPECT_GT(stored->register_time().seconds(), 0);

  auto online = store_->ListOnline();
  ASSERT_TRUE(online.ok()) << online.status();
  ASSERT_EQ(online->size(), 1u);
  const v1::Executor& e = (*online)[0];
  EXPECT_EQ(e.app(), "demo");
  EXPECT_EQ(e.address(), "10.0.0.1:7200");
  ASSERT_EQ(e.handlers_size(), 2);
  EXPECT_EQ(e.handlers(1), "with \"quote\" and \\ back,slash");
  EXPECT_EQ(e.labels().at("team"), "a \"b\"");
  EXPECT_EQ(e.labels().at("zone"), "eu-1");
  EXPECT_EQ(e.capacity(), 8);
  EXPECT_TRUE(e.allow_scripts());
  EXPECT_EQ(e.registry_replica(), "r1");
  EXPECT_EQ(e.register_time().seconds(), stored->register_time().seconds());

  auto apps = store_->ListAppConfigs();
  ASSERT_TRUE(apps.ok());
  ASSERT_EQ(apps->size(), 3u);  // The three the fixture made: none added.
  EXPECT_EQ((*apps)[0].name, "demo");
  EXPECT_EQ((*apps)[0].address_type, v1::ADDRESS_TYPE_AUTO);
}

TEST_F(PgExecutorStoreTest, RefusesAnUnknownAppAndWritesNothing) {
  auto refused = store_->Register(Exec("nobody-made-me", "h:1"), "r1", "s1", absl::Seconds(10));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_EQ(Row("nobody-made-me", "h:1"), "");
  auto apps = store_->ListAppConfigs();
  ASSERT_TRUE(apps.ok());
  EXPECT_EQ(apps->size(), 3u);  // The fixture's.
}

// The instance tag and the owning session's offline are checked on this store by
// executor_store_contract_test (with the fake), which holds the cases both stores share.
TEST_F(PgExecutorStoreTest, RenewReportsSupersededAndMissingSessions) {
  ASSERT_TRUE(store_->Register(Exec("demo", "h:1"), "r1", "s1", absl::Seconds(10)).ok());
  ASSERT_TRUE(store_->Register(Exec("demo", "h:2"), "r1", "s2", absl::Seconds(10), kX).ok());
  ASSERT_TRUE(store_->Register(Exec("demo", "h:3"), "r1", "s3", absl::Seconds(10)).ok());
  ASSERT_TRUE(store_->Register(Exec("demo", "h:2"), "r2", "s2b", absl::Seconds(10), kX).ok());
  Sql("DELETE FROM executors WHERE address = 'h:3'");
  Sql("UPDATE executors SET lease_until = now() + interval '1 second' WHERE "
      "address = 'h:1'");
  const absl::Time beat = absl::FromUnixSeconds(1800000000);
  auto lost = store_->RenewLeases("r1",
                                  {{{{"demo", "h:1"}, "s1"}, beat, 3, 4},
                                   {{{"demo", "h:2"}, "s2"}, beat, 0, 0},
                                   {{{"demo", "h:3"}, "s3"}, beat, 0, 0}},
                                  absl::Seconds(30));
  ASSERT_TRUE(lost.ok()) << lost.status();
  ASSERT_EQ(lost->size(), 2u);
  for (const LostSession& l : *lost) {
    if (l.session_id == "s2") {
      EXPECT_EQ(l.reason, LostReason::kSuperseded);
    } else {
      EXPECT_EQ(l.session_id, "s3");
      EXPECT_EQ(l.reason, LostReason::kMissing);
    }
  }
  auto rows = store_->GetOnline({{"demo", "h:1"}});
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].running(), 3);
  EXPECT_EQ((*rows)[0].queued(), 4);
  EXPECT_EQ((*rows)[0].last_beat_time().seconds(), 1800000000);
  pqxx::connection conn(dsn_);
  pqxx::nontransaction tx(conn);
  EXPECT_TRUE(tx.exec("SELECT lease_until > now() + interval '20 seconds' FROM executors "
                      "WHERE address = 'h:1'")[0][0]
                  .as<bool>());
}

TEST_F(PgExecutorStoreTest, ExpireTakesOnlyLapsedLeasesOffline) {
  ASSERT_TRUE(store_->Register(Exec("demo", "h:1"), "dead", "s1", absl::Seconds(10)).ok());
  ASSERT_TRUE(store_->Register(Exec("demo", "h:2"), "live", "s2", absl::Seconds(10)).ok());
  Sql("UPDATE executors SET lease_until = now() - interval '1 second' WHERE "
      "address = 'h:1'");
  auto n = store_->ExpireLeases();
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  auto online = store_->ListOnline();
  ASSERT_EQ(online->size(), 1u);
  EXPECT_EQ((*online)[0].address(), "h:2");
  EXPECT_EQ(*store_->ExpireLeases(), 0);
}

TEST_F(PgExecutorStoreTest, AnotherInstanceCannotReplaceAnOnlineRow) {
  ASSERT_TRUE(store_->Register(Exec("demo", "h:1"), "r1", "s1", absl::Seconds(10), kX).ok());
  // Another app may not take the address while it is online, whatever the instance.
  auto other_app = store_->Register(Exec("other", "h:1"), "r2", "s0", absl::Seconds(10), kY);
  EXPECT_EQ(other_app.status().code(), absl::StatusCode::kAlreadyExists) << other_app.status();
  EXPECT_EQ(other_app.status().message(),
            "register.address: h:1 is online for another app (demo); an address serves one app "
            "at a time");
  EXPECT_EQ(Row("other", "h:1"), "");
  auto refused = store_->Register(Exec("demo", "h:1"), "r2", "s2", absl::Seconds(10), kY);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists) << refused.status();
  EXPECT_EQ(refused.status().message(), "executor demo/h:1 is online with another instance");
  // Without an instance id nothing matches either.
  EXPECT_EQ(store_->Register(Exec("demo", "h:1"), "r2", "s2", absl::Seconds(10)).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Row("demo", "h:1"), "r1|s1|instance-x-0123456789|t");

  // The same instance through another replica replaces it.
  ASSERT_TRUE(store_->Register(Exec("demo", "h:1"), "r2", "s3", absl::Seconds(10), kX).ok());
  EXPECT_EQ(Row("demo", "h:1"), "r2|s3|instance-x-0123456789|t");

  // Offline: anyone.
  ASSERT_TRUE(*store_->MarkOffline({{"demo", "h:1"}, "s3"}));
  ASSERT_TRUE(store_->Register(Exec("demo", "h:1"), "r1", "s4", absl::Seconds(10), kY).ok());
  EXPECT_EQ(Row("demo", "h:1"), "r1|s4|instance-y-0123456789|t");

  // Online but its lease ran out (its replica died, nobody expired it yet): anyone.
  Sql("UPDATE executors SET lease_until = now() - interval '1 millisecond' WHERE address = "
      "'h:1' AND app = 'demo'");
  ASSERT_TRUE(store_->Register(Exec("demo", "h:1"), "r2", "s5", absl::Seconds(10), kX).ok());
  EXPECT_EQ(Row("demo", "h:1"), "r2|s5|instance-x-0123456789|t");

  // A row written before instance ids existed (NULL) is online: refused.
  Sql("UPDATE executors SET instance_id = NULL WHERE address = 'h:1' AND app = 'demo'");
  EXPECT_EQ(
      store_->Register(Exec("demo", "h:1"), "r2", "s6", absl::Seconds(10), kX).status().code(),
      absl::StatusCode::kAlreadyExists);
}

TEST_F(PgExecutorStoreTest, ARefusedRegistrationWritesNothingAndAnnouncesNothing) {
  Sql("INSERT INTO executors (app, address, replica_id, session_id, lease_until, instance_id) "
      "VALUES ('demo', 'h:1', 'r1', 's1', now() + interval '1 hour', 'instance-x-0123456789')");
  PgChangeFeed feed(dsn_);
  ASSERT_TRUE(feed.Connect().ok());
  EXPECT_EQ(
      store_->Register(Exec("demo", "h:1"), "r2", "s2", absl::Seconds(10), kY).status().code(),
      absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(
      store_->Register(Exec("ghost", "h:2"), "r2", "s3", absl::Seconds(10), kY).status().code(),
      absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store_->GetAppConfigs({"ghost"})->empty());
  EXPECT_EQ(Row("demo", "h:1"), "r1|s1|instance-x-0123456789|t");
  auto none = feed.Wait(absl::Milliseconds(200));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// Many registrations of one free address by different instances at once, as replicas on their
// own connections would send them: exactly one wins, and the row is the winner's.
TEST_F(PgExecutorStoreTest, RacingInstancesForAFreeAddressHaveExactlyOneWinner) {
  constexpr int kRacers = 8;
  for (int round = 0; round < 5; ++round) {
    const std::string address = absl::StrCat("h:", round + 1);
    std::vector<absl::StatusCode> codes(kRacers);
    std::vector<std::thread> threads;
    absl::Mutex mu;
    bool go = false;
    for (int i = 0; i < kRacers; ++i) {
      threads.emplace_back([&, i] {
        {
          absl::MutexLock lock(&mu);
          mu.Await(absl::Condition(&go));
        }
        codes[i] =
            store_
                ->Register(Exec("race", address), absl::StrCat("r", i), absl::StrCat("s", i),
                           absl::Seconds(10), absl::StrCat("instance-racer-", i, "-0123456789"))
                .status()
                .code();
      });
    }
    {
      absl::MutexLock lock(&mu);
      go = true;
    }
    for (std::thread& t : threads) t.join();
    int winner = -1;
    for (int i = 0; i < kRacers; ++i) {
      if (codes[i] == absl::StatusCode::kOk) {
        EXPECT_EQ(winner, -1) << "two winners: " << winner << " and " << i;
        winner = i;
      } else {
        EXPECT_EQ(codes[i], absl::StatusCode::kAlreadyExists);
      }
    }
    ASSERT_NE(winner, -1);
    EXPECT_EQ(Row("race", address),
              absl::StrCat("r", winner, "|s", winner, "|instance-racer-", winner, "-0123456789|t"));
  }
}

TEST_F(PgExecutorStoreTest, ChangeFeedDeliversEveryChange) {
  PgChangeFeed feed(dsn_);
  ASSERT_TRUE(feed.Connect().ok());
  const absl::Time before = RealClock::Get().Now();
  ASSERT_TRUE(store_->Register(Exec("demo", "h:1"), "r1", "s1", absl::Seconds(10)).ok());
  // The executor only: a registration creates no app.
  std::vector<Change> got = WaitFor(feed, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, Change::Kind::kExecutor);
  EXPECT_EQ(got[0].address, "h:1");
  EXPECT_GE(got[0].committed_at, before - absl::Seconds(1));
  EXPECT_LT(RealClock::Get().Now() - before, absl::Milliseconds(500));

  ASSERT_TRUE(*store_->MarkOffline({{"demo", "h:1"}, "s1"}));
  got = WaitFor(feed, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].address, "h:1");

  // Nothing more: a timeout is an empty list.
  auto none = feed.Wait(absl::Milliseconds(50));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(PgExecutorStoreTest, ChangeFeedReportsALostConnection) {
  PgChangeFeed feed(dsn_);
  ASSERT_TRUE(feed.Connect().ok());
  {
    pqxx::connection admin(dsn_);
    pqxx::nontransaction tx(admin);
    // Every other session of this test database, the feed's among them.
    tx.exec(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()");
  }
  absl::Status status;
  const absl::Time deadline = RealClock::Get().Now() + absl::Seconds(3);
  while (RealClock::Get().Now() < deadline) {
    auto r = feed.Wait(absl::Milliseconds(100));
    if (!r.ok()) {
      status = r.status();
      break;
    }
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_TRUE(feed.Connect().ok());
}

TEST_F(PgExecutorStoreTest, AppConfigs) {
  Sql("INSERT INTO apps (name, address_type, manual_addresses) "
      "VALUES ('m', 'MANUAL', '{\"a:1\",\"b:2\"}'), ('x', 'AUTO', '{}')");
  auto got = store_->GetAppConfigs({"m", "missing"});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].address_type, v1::ADDRESS_TYPE_MANUAL);
  EXPECT_EQ((*got)[0].manual_addresses, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(store_->ListAppConfigs()->size(), 5u);  // With the fixture's three.
}

TEST(ParseChangePayloadTest, Formats) {
  Change c;
  ASSERT_TRUE(ParseChangePayload("e|1700000000000000|demo|h:1", &c));
  EXPECT_EQ(c.kind, Change::Kind::kExecutor);
  EXPECT_EQ(c.app, "demo");
  EXPECT_EQ(c.address, "h:1");
  EXPECT_EQ(c.committed_at, absl::FromUnixSeconds(1700000000));
  ASSERT_TRUE(ParseChangePayload("a|1|demo", &c));
  EXPECT_EQ(c.kind, Change::Kind::kApp);
  EXPECT_FALSE(ParseChangePayload("x|1|demo", &c));
  EXPECT_FALSE(ParseChangePayload("e|nan|demo|h:1", &c));
  EXPECT_FALSE(ParseChangePayload("e|1|demo", &c));
}

}  // namespace
}  // namespace jobwheel::registry
