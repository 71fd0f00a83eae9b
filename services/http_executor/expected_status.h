#ifndef JOBWHEEL_SERVICES_HTTP_EXECUTOR_EXPECTED_STATUS_H_
#define JOBWHEEL_SERVICES_HTTP_EXECUTOR_EXPECTED_STATUS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace jobwheel::http_executor {

// The HTTP status codes that make an HTTP job succeed: codes (204), classes ("2xx") and
// ranges ("200-299"), each within 100..599. Default (no entries given): 2xx. A value type.
class ExpectedStatus {
 public:
  ExpectedStatus() : ranges_{{200, 299}} {}

  // Parses one entry; INVALID_ARGUMENT with the reason.
  static absl::StatusOr<std::pair<int, int>> ParseEntry(absl::string_view text);
  // From the entries (each "204", "2xx" or "200-299"); an empty list is the default.
  static absl::StatusOr<ExpectedStatus> FromEntries(const std::vector<std::string>& entries);

  bool Matches(int status) const;
  // "2xx", "200,204,300-302" (classes written as such).
  std::string ToString() const;

 private:
  std::vector<std::pair<int, int>> ranges_;
};

}  // namespace jobwheel::http_executor

#endif  // JOBWHEEL_SERVICES_HTTP_EXECUTOR_EXPECTED_STATUS_H_
