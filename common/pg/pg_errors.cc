#include "common/pg/pg_errors.h"

#include "absl/strings/str_cat.h"
#include "pqxx/pqxx"

namespace jobwheel {

absl::Status PgErrorToStatus(const std::exception& e, absl::string_view what) {
  if (dynamic_cast<const pqxx::unique_violation*>(&e) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat(what, ": ", e.what()));
  }
  if (dynamic_cast<const pqxx::serialization_failure*>(&e) != nullptr ||
      dynamic_cast<const pqxx::deadlock_detected*>(&e) != nullptr) {
    return absl::AbortedError(absl::StrCat(what, ": ", e.what()));
  }
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
      dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    return absl::UnavailableError(absl::StrCat(what, ": database connection lost: ", e.what()));
  }
  if (dynamic_cast<const pqxx::foreign_key_violation*>(&e) != nullptr ||
      dynamic_cast<const pqxx::check_violation*>(&e) != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": ", e.what()));
  }
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e); sql != nullptr) {
    // A server that is no primary (any more): read-only transaction (25006: a demoted or
    // standby server), or shutting down / starting up (57P01..57P03, as in a failover). The
    // caller drops the connection and reconnects, which finds the primary.
    const std::string& state = sql->sqlstate();
    if (state == "25006" || state == "57P01" || state == "57P02" || state == "57P03") {
      return absl::UnavailableError(
          absl::StrCat(what, ": database not writable here (SQLSTATE ", state, "): ", e.what()));
    }
    return absl::InternalError(absl::StrCat(what, ": SQLSTATE ", sql->sqlstate(), ": ", e.what()));
  }
  return absl::InternalError(absl::StrCat(what, ": ", e.what()));
}

}  // namespace jobwheel
