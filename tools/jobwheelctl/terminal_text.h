#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_TERMINAL_TEXT_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_TERMINAL_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace jobwheel::ctl {

// Job data (names, params, messages, log lines, token names, error messages) comes from
// whoever can edit jobs or run handlers; printed as it is, an escape sequence in it could
// rewrite the operator's terminal (move the cursor, hide lines, set the title, fake output).
// This returns `text` safe to print: C0 controls (incl. ESC, CR, BEL, backspace, newline),
// DEL and C1 controls (U+0080..U+009F) become `\xNN` (`\n`, `\r`, `\t` by name), Unicode
// bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069) become `\u20NN`,
// and bytes that are not valid UTF-8 become `\xNN`. Other text, including non-ASCII
// letters, passes unchanged. With `keep_tabs`, a tab passes too (log lines).
std::string EscapeForTerminal(absl::string_view text, bool keep_tabs = false);

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_TERMINAL_TEXT_H_
