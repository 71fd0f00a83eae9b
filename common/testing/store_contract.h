#ifndef JOBWHEEL_COMMON_TESTING_STORE_CONTRACT_H_
#define JOBWHEEL_COMMON_TESTING_STORE_CONTRACT_H_

#include <memory>
#include <string>
#include <utility>

#include "common/pg/pg_pool.h"
#include "common/testing/pg_store_test.h"
#include "gtest/gtest.h"

namespace jobwheel::testing {

// For the typed suites that run a store's contract on its fake and on PostgreSQL: names each
// environment by its `kName` (TYPED_TEST_SUITE's third argument), so a case reads
// "Suite/Pg.Case". Each environment declares `static constexpr char kName[] = "Pg";`.
struct StoreEnvNames {
  template <typename Env>
  static std::string GetName(int) {
    return Env::kName;
  }
};

// The PostgreSQL environment of such a suite: a fresh database (PgTestDatabase) and `Store`
// on its pool; ok() is false (and the test has failed) when the database cannot be made. A
// suite derives from it to add what it makes behind the store's back through db_.
template <typename Store>
class PgStoreEnv {
 public:
  static constexpr char kName[] = "Pg";

  explicit PgStoreEnv(int pool_size = 2, PgPool::PlanMode plan_mode = PgPool::PlanMode::kCustom) {
    auto db = PgTestDatabase::Create(pool_size, plan_mode);
    EXPECT_TRUE(db.ok()) << db.status();
    if (!db.ok()) return;
    db_ = std::move(*db);
    store_ = std::make_unique<Store>(db_->pool());
  }
  bool ok() const { return store_ != nullptr; }
  Store& store() { return *store_; }

 protected:
  std::unique_ptr<PgTestDatabase> db_;
  std::unique_ptr<Store> store_;
};

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_STORE_CONTRACT_H_
