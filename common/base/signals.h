#ifndef JOBWHEEL_COMMON_BASE_SIGNALS_H_
#define JOBWHEEL_COMMON_BASE_SIGNALS_H_

#include <signal.h>

namespace jobwheel {

// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts afterwards; call
// first thing in main. Then WaitForTerminationSignal() returns the signal that arrived.
inline void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

inline int WaitForTerminationSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_SIGNALS_H_
