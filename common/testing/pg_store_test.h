#ifndef JOBWHEEL_COMMON_TESTING_PG_STORE_TEST_H_
#define JOBWHEEL_COMMON_TESTING_PG_STORE_TEST_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/pg/pg_pool.h"
#include "gtest/gtest.h"

namespace jobwheel::testing {

// What a PostgreSQL store test runs on: a fresh, migrated database on the test server
// (CreateMigratedTestDatabase) and a PgPool on it, with a way to read and write the tables
// behind the store's back. Not thread-safe to create; the pool is.
class PgTestDatabase {
 public:
  static absl::StatusOr<std::unique_ptr<PgTestDatabase>> Create(
      int pool_size = 2, PgPool::PlanMode plan_mode = PgPool::PlanMode::kCustom);

  const std::string& dsn() const { return dsn_; }
  PgPool& pool() { return *pool_; }

  // Runs `sql` in a transaction of its own, on a connection of its own.
  void Exec(const std::string& sql) const;
  // The first column of the first row of `sql` as text; "" when there is no row or it is NULL.
  std::string QueryValue(const std::string& sql) const;

 private:
  PgTestDatabase(std::string dsn, int pool_size, PgPool::PlanMode plan_mode);

  std::string dsn_;
  std::unique_ptr<PgPool> pool_;
};

// A gtest fixture holding a PgTestDatabase (db_, with dsn_ and pool_ for short) made in SetUp;
// the test fails there when the database cannot be made. A subclass that builds its store in
// its own SetUp calls PgStoreTest::SetUp() first and returns on HasFatalFailure().
class PgStoreTest : public ::testing::Test {
 protected:
  explicit PgStoreTest(int pool_size = 2, PgPool::PlanMode plan_mode = PgPool::PlanMode::kCustom)
      : pool_size_(pool_size), plan_mode_(plan_mode) {}

  void SetUp() override;

  // db_->Exec(sql).
  void Sql(const std::string& sql) const { db_->Exec(sql); }

  std::unique_ptr<PgTestDatabase> db_;
  std::string dsn_;
  PgPool* pool_ = nullptr;

 private:
  const int pool_size_;
  const PgPool::PlanMode plan_mode_;
};

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_PG_STORE_TEST_H_
