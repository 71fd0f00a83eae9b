#ifndef JOBWHEEL_COMMON_PG_MIGRATIONS_H_
#define JOBWHEEL_COMMON_PG_MIGRATIONS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqxx/pqxx"

namespace jobwheel {

// Brings the schema up to date. Idempotent, and safe when several replicas start at once:
// a transaction-level advisory lock serializes them and each applies what is missing.
absl::Status ApplyMigrations(pqxx::connection& conn);

// The newest schema version this build knows.
int LatestSchemaVersion();

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_PG_MIGRATIONS_H_
