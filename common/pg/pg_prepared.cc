#include "common/pg/pg_prepared.h"

#include "absl/flags/flag.h"

ABSL_FLAG(bool, db_prepared_statements, true,
          "Use named server-side prepared statements on the fire path (faster); false behind a "
          "connection pooler in transaction mode such as PgBouncer 1.18, which does not keep "
          "them (docs/database.md)");

namespace jobwheel {

bool ServerPreparedStatements() { return absl::GetFlag(FLAGS_db_prepared_statements); }

}  // namespace jobwheel
