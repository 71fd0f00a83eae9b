#ifndef JOBWHEEL_COMMON_TESTING_PG_TEST_DB_H_
#define JOBWHEEL_COMMON_TESTING_PG_TEST_DB_H_

#include <string>

#include "absl/status/statusor.h"

namespace jobwheel::testing {

// Creates a fresh, empty database on the test PostgreSQL server and returns its DSN.
// The server is the real one that scripts/test (or scripts/test-pg start) runs and names in
// JOBWHEEL_TEST_PG_DSN; without it this fails with instructions.
absl::StatusOr<std::string> CreateTestDatabase();

// As above, with the schema migrations applied.
absl::StatusOr<std::string> CreateMigratedTestDatabase();

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_PG_TEST_DB_H_
