#ifndef JOBWHEEL_COMMON_PG_PG_ERRORS_H_
#define JOBWHEEL_COMMON_PG_PG_ERRORS_H_

#include <exception>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace jobwheel {

// Maps a libpqxx exception to a status: unique_violation → ALREADY_EXISTS,
// serialization/deadlock → ABORTED, broken connection, a read-only server (25006) or one
// shutting down (57P01..03) → UNAVAILABLE, foreign-key or check
// violation → FAILED_PRECONDITION, other → INTERNAL with the SQLSTATE. `what` says which
// operation failed.
absl::Status PgErrorToStatus(const std::exception& e, absl::string_view what);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_PG_PG_ERRORS_H_
