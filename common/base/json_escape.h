#ifndef JOBWHEEL_COMMON_BASE_JSON_ESCAPE_H_
#define JOBWHEEL_COMMON_BASE_JSON_ESCAPE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace jobwheel {

// The inside of a JSON string holding `s`: quotes, backslashes and control characters
// escaped (\n, \r, \t, else \u00XX); other bytes (UTF-8 included) as they are.
std::string JsonEscape(absl::string_view s);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_JSON_ESCAPE_H_
