#ifndef JOBWHEEL_SERVICES_DISPATCHER_RESULT_MESSAGE_H_
#define JOBWHEEL_SERVICES_DISPATCHER_RESULT_MESSAGE_H_

#include <cstddef>
#include <string>

namespace jobwheel::dispatcher {

// Cuts `message` to at most `max_bytes` (never inside a UTF-8 sequence) and appends
// " …(truncated)"; shorter messages are left alone. How every executor-supplied text the
// dispatcher stores (result messages, late results) is bounded.
void TruncateResultMessage(std::string* message, size_t max_bytes);

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_RESULT_MESSAGE_H_
