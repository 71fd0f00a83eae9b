#include "common/server/pg_readiness_check.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "pqxx/pqxx"

namespace jobwheel {

Readiness::Check PgReadinessCheck(PgPool& pool, absl::Duration timeout) {
  const int64_t ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout));
  const std::string set_timeout = absl::StrCat("SET LOCAL statement_timeout = ", ms);
  return [&pool, timeout, set_timeout]() {
    return pool.Run(
        "readiness_check",
        [&set_timeout](pqxx::connection& c) {
          pqxx::work tx(c);
          tx.exec(set_timeout);
          tx.exec("SELECT 1");
          tx.commit();
        },
        timeout);
  };
}

void AddDatabaseCheck(Readiness& readiness, PgPool& pool, const ReadinessOptions& options) {
  readiness.AddPeriodicCheck(kDatabaseCondition, PgReadinessCheck(pool, options.db_check_timeout),
                             options.db_check_interval, options.db_check_timeout);
}

}  // namespace jobwheel
