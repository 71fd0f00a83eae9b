#ifndef JOBWHEEL_SERVICES_DISPATCHER_LATE_RESULT_H_
#define JOBWHEEL_SERVICES_DISPATCHER_LATE_RESULT_H_

#include <cstddef>
#include <string>

#include "absl/time/time.h"
#include "jobwheel/v1/dispatcher.pb.h"

namespace jobwheel::dispatcher {

// At most this many bytes of a late result's message are kept (plus " …(truncated)").
inline constexpr size_t kLateResultMessageBytes = 1024;

// How a result that arrived after its run's status was decided is kept (runs.late_result):
// "SUCCEEDED code 0 at 2026-01-02T03:04:05Z from host:port: <message>". The time is the
// result's end time (else `received`), so the same result gives the same text. The address and
// the message are cut (never inside a UTF-8 sequence). Never contains the result key.
std::string LateResultText(const v1::RunResult& result, absl::Time received);

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_LATE_RESULT_H_
