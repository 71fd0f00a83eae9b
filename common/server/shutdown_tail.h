#ifndef JOBWHEEL_COMMON_SERVER_SHUTDOWN_TAIL_H_
#define JOBWHEEL_COMMON_SERVER_SHUTDOWN_TAIL_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/server/readiness.h"
#include "common/time/clock.h"

namespace jobwheel {

// How every server's main ends: signal → drain → shutdown.
struct ShutdownTail {
  // Names the service in the log lines ("<service> stopped").
  std::string service;
  // Readiness answers "draining" (health NOT_SERVING, /readyz 503) at least this long, counted
  // from the signal, before the first shutdown step.
  absl::Duration drain_delay = absl::ZeroDuration();
  // What the service does while draining (e.g. the registry hands its executors to another
  // replica); optional. Runs right after readiness turns draining; the drain delay counts
  // from before it.
  std::function<void()> drain;
  // Then, in order: what stops the service (the server, its workers, the readiness checks).
  std::vector<std::function<void()>> shutdown;
};

// Waits for SIGTERM or SIGINT (BlockTerminationSignals() must have been called first thing in
// main, before any thread started), logs it, marks `readiness` draining ("signal <n>"), runs
// tail.drain, waits until tail.drain_delay after the signal on `clock`, then runs the shutdown
// steps in order and logs "<service> stopped". Returns the signal.
int AwaitSignalThenShutDown(Readiness& readiness, Clock& clock, const ShutdownTail& tail);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_SERVER_SHUTDOWN_TAIL_H_
