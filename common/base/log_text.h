#ifndef JOBWHEEL_COMMON_BASE_LOG_TEXT_H_
#define JOBWHEEL_COMMON_BASE_LOG_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace jobwheel {

// Text a client chose (a request path, a header, a peer's message), made safe for one log
// line: printable ASCII is kept, a backslash becomes "\\", and every other byte (newlines, ESC
// and other controls, DEL, anything not ASCII) becomes "\xNN", so the text can neither start a
// forged line nor drive a terminal. Longer than `max_bytes`: cut, with "...(N bytes)" saying how
// long it was.
std::string LogText(absl::string_view text, size_t max_bytes = 256);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_LOG_TEXT_H_
