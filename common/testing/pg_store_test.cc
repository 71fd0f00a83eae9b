#include "common/testing/pg_store_test.h"

#include <utility>

#include "common/testing/pg_test_db.h"
#include "pqxx/pqxx"

namespace jobwheel::testing {

absl::StatusOr<std::unique_ptr<PgTestDatabase>> PgTestDatabase::Create(int pool_size,
                                                                       PgPool::PlanMode plan_mode) {
  absl::StatusOr<std::string> dsn = CreateMigratedTestDatabase();
  if (!dsn.ok()) return dsn.status();
  return std::unique_ptr<PgTestDatabase>(new PgTestDatabase(*dsn, pool_size, plan_mode));
}

PgTestDatabase::PgTestDatabase(std::string dsn, int pool_size, PgPool::PlanMode plan_mode)
    : dsn_(std::move(dsn)), pool_(std::make_unique<PgPool>(dsn_, pool_size, nullptr, plan_mode)) {}

void PgTestDatabase::Exec(const std::string& sql) const {
  pqxx::connection conn(dsn_);
  pqxx::work tx(conn);
  tx.exec(sql);
  tx.commit();
}

std::string PgTestDatabase::QueryValue(const std::string& sql) const {
  pqxx::connection conn(dsn_);
  pqxx::nontransaction tx(conn);
  pqxx::result r = tx.exec(sql);
  if (r.empty() || r[0][0].is_null()) return std::string();
  return r[0][0].as<std::string>();
}

void PgStoreTest::SetUp() {
  absl::StatusOr<std::unique_ptr<PgTestDatabase>> db =
      PgTestDatabase::Create(pool_size_, plan_mode_);
  ASSERT_TRUE(db.ok()) << db.status();
  db_ = std::move(*db);
  dsn_ = db_->dsn();
  pool_ = &db_->pool();
}

}  // namespace jobwheel::testing
