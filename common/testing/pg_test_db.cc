#include "common/testing/pg_test_db.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/pg/migrations.h"
#include "common/pg/pg_errors.h"
#include "common/time/clock.h"
#include "pqxx/pqxx"

namespace jobwheel::testing {

absl::StatusOr<std::string> CreateTestDatabase() {
  const char* admin = std::getenv("JOBWHEEL_TEST_PG_DSN");
  if (admin == nullptr || *admin == '\0') {
    return absl::FailedPreconditionError(
        "JOBWHEEL_TEST_PG_DSN is not set: run tests through scripts/test, or start the test "
        "database with `scripts/test-pg start` and export what it prints");
  }
  static std::atomic<int> counter{0};
  const std::string name =
      absl::StrCat("t_", getpid(), "_", absl::ToUnixMicros(RealClock::Get().Now()) % 1000000000,
                   "_", counter.fetch_add(1));
  try {
    pqxx::connection conn(admin);
    pqxx::nontransaction tx(conn);
    tx.exec("CREATE DATABASE " + name);
  } catch (const std::exception& e) {
    return PgErrorToStatus(e, "create test database");
  }
  return absl::StrCat(admin, " dbname=", name);
}

absl::StatusOr<std::string> CreateMigratedTestDatabase() {
  auto dsn = CreateTestDatabase();
  if (!dsn.ok()) return dsn;
  try {
    pqxx::connection conn(*dsn);
    absl::Status s = ApplyMigrations(conn);
    if (!s.ok()) return s;
  } catch (const std::exception& e) {
    return PgErrorToStatus(e, "migrate test database");
  }
  return dsn;
}

}  // namespace jobwheel::testing
