#ifndef JOBWHEEL_COMMON_BASE_MUTEX_MODE_H_
#define JOBWHEEL_COMMON_BASE_MUTEX_MODE_H_

namespace jobwheel {

// Debian's Abseil is built with its debug checks: taking an absl::Mutex while holding another
// also updates a global lock-order graph, which about triples the cost of the lock. Services
// turn that off at start; the unit tests keep it, so lock-order cycles are still found there.
void DisableMutexDeadlockDetection();

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_MUTEX_MODE_H_
