#include "services/registry/pg_app_store.h"

#include <memory>
#include <string>
#include <utility>

#include "common/pg/pg_pool.h"
#include "common/testing/pg_test_db.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "services/registry/pg_executor_store.h"

namespace jobwheel::registry {
namespace {

class PgAppStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    pool_ = std::make_unique<PgPool>(dsn_, 2);
    store_ = std::make_unique<PgAppStore>(*pool_);
  }

  // The stored apps.address_type of `name`.
  std::string StoredAddressType(const std::string& name) {
    pqxx::connection conn(dsn_);
    pqxx::nontransaction tx(conn);
    return tx.exec_params1("SELECT address_type FROM apps WHERE name = $1", name)[0]
        .as<std::string>();
  }

  void Sql(const std::string& sql) {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    tx.exec(sql);
    tx.commit();
  }

  std::string dsn_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgAppStore> store_;
};

v1::App App(const std::string& name, v1::AddressType type) {
  v1::App app;
  app.set_name(name);
  app.set_title("title of " + name);
  app.set_address_type(type);
  if (type == v1::ADDRESS_TYPE_MANUAL) {
    app.add_manual_addresses("10.0.0.1:9999");
    app.add_manual_addresses("10.0.0.2:9999");
  }
  return app;
}

// Each AddressType is stored under its proto name and read back as itself; UNSPECIFIED is
// stored as AUTO, as which it is treated.
TEST_F(PgAppStoreTest, AddressTypesRoundTripThroughTheirStoredNames) {
  auto manual = store_->Create(App("m", v1::ADDRESS_TYPE_MANUAL));
  ASSERT_TRUE(manual.ok()) << manual.status();
  EXPECT_EQ(manual->address_type(), v1::ADDRESS_TYPE_MANUAL);
  EXPECT_EQ(manual->manual_addresses_size(), 2);
  EXPECT_EQ(StoredAddressType("m"), "MANUAL");

  ASSERT_TRUE(store_->Create(App("a", v1::ADDRESS_TYPE_AUTO)).ok());
  EXPECT_EQ(StoredAddressType("a"), "AUTO");
  ASSERT_TRUE(store_->Create(App("u", v1::ADDRESS_TYPE_UNSPECIFIED)).ok());
  EXPECT_EQ(StoredAddressType("u"), "AUTO");

  auto got = store_->Get("m");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->address_type(), v1::ADDRESS_TYPE_MANUAL);
  got = store_->Get("u");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->address_type(), v1::ADDRESS_TYPE_AUTO);

  auto updated = store_->Update(App("m", v1::ADDRESS_TYPE_AUTO));
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(updated->address_type(), v1::ADDRESS_TYPE_AUTO);
  EXPECT_EQ(StoredAddressType("m"), "AUTO");
}

// The registry's read of the scheduler's jobs table: an app with jobs is not deleted.
TEST_F(PgAppStoreTest, DeleteRefusesAnAppWithJobs) {
  ASSERT_TRUE(store_->Create(App("busy", v1::ADDRESS_TYPE_AUTO)).ok());
  ASSERT_TRUE(store_->Create(App("idle", v1::ADDRESS_TYPE_AUTO)).ok());
  Sql("INSERT INTO jobs (app, name, schedule_kind) VALUES ('busy', 'j', 'NONE')");
  absl::Status s = store_->Delete("busy");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(store_->Get("busy").ok());
  EXPECT_TRUE(store_->Delete("idle").ok());
  EXPECT_EQ(store_->Get("idle").status().code(), absl::StatusCode::kNotFound);
}

// A drain is kept by app and address, whether or not the executor is online, and every listing
// of the executor carries it until it is undone.
TEST_F(PgAppStoreTest, DrainsAreListedWithTheExecutorUntilUndone) {
  ASSERT_TRUE(store_->Create(App("demo", v1::ADDRESS_TYPE_AUTO)).ok());
  PgExecutorStore executors(*pool_);
  v1::Executor e;
  e.set_app("demo");
  e.set_address("10.0.0.1:7200");
  ASSERT_TRUE(executors.Register(e, "r1", "s1", absl::Seconds(10), "instance-0123456789").ok());
  auto draining = [&]() -> std::pair<bool, std::string> {
    auto online = executors.GetOnline({{"demo", "10.0.0.1:7200"}});
    EXPECT_TRUE(online.ok()) << online.status();
    if (!online.ok() || online->size() != 1) return {false, "missing"};
    return {(*online)[0].draining(), (*online)[0].drain_reason()};
  };
  EXPECT_EQ(draining(), std::make_pair(false, std::string()));
  ASSERT_TRUE(store_->SetDraining("demo", "10.0.0.1:7200", true, "kernel update", "ops").ok());
  EXPECT_EQ(draining(), std::make_pair(true, std::string("kernel update")));
  // Kept across a re-registration of the address.
  ASSERT_TRUE(executors.MarkOffline({{"demo", "10.0.0.1:7200"}, "s1"}).ok());
  ASSERT_TRUE(executors.Register(e, "r1", "s2", absl::Seconds(10), "instance-9876543210").ok());
  EXPECT_EQ(draining().first, true);
  auto listed = executors.ListOnline();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_TRUE((*listed)[0].draining());
  ASSERT_TRUE(store_->SetDraining("demo", "10.0.0.1:7200", false, "", "ops").ok());
  EXPECT_EQ(draining(), std::make_pair(false, std::string()));
  EXPECT_EQ(store_->SetDraining("nope", "10.0.0.1:7200", true, "", "ops").code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace jobwheel::registry
