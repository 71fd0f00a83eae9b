#ifndef JOBWHEEL_COMMON_SERVER_PG_READINESS_CHECK_H_
#define JOBWHEEL_COMMON_SERVER_PG_READINESS_CHECK_H_

#include "absl/time/time.h"
#include "common/pg/pg_pool.h"
#include "common/server/readiness.h"

namespace jobwheel {

// A Readiness check of the database: SELECT 1 on a connection of `pool` (op "readiness_check"
// for the pool's observer), waiting at most `timeout` for a free connection and for the
// statement (statement_timeout, scoped to its transaction). `pool` must outlive the check.
Readiness::Check PgReadinessCheck(PgPool& pool, absl::Duration timeout);

// Declares the database condition of `readiness`, checked through `pool` as `options` say.
void AddDatabaseCheck(Readiness& readiness, PgPool& pool, const ReadinessOptions& options);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_SERVER_PG_READINESS_CHECK_H_
