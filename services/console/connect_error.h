#ifndef JOBWHEEL_SERVICES_CONSOLE_CONNECT_ERROR_H_
#define JOBWHEEL_SERVICES_CONSOLE_CONNECT_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace jobwheel::console {

// The Connect protocol's name of a status code ("invalid_argument"; "ok" for OK).
absl::string_view ConnectCodeName(absl::StatusCode code);

// The HTTP status the Connect protocol gives an error code (its "Error Codes" table:
// invalid_argument 400, unauthenticated 401, ... unavailable 503); 200 for OK.
int ConnectHttpStatus(absl::StatusCode code);

// A Connect error body: {"code":"<name>","message":"<message>"} (message omitted when empty).
// A non-error status is reported as "unknown": Connect has no error code for success.
std::string ConnectErrorJson(const absl::Status& status);

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_CONNECT_ERROR_H_
