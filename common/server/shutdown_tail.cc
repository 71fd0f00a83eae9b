#include "common/server/shutdown_tail.h"

#include "absl/strings/str_cat.h"
#include "common/base/signals.h"
#include "spdlog/spdlog.h"

namespace jobwheel {

int AwaitSignalThenShutDown(Readiness& readiness, Clock& clock, const ShutdownTail& tail) {
  const int sig = WaitForTerminationSignal();
  const absl::Time signalled = clock.Now();
  spdlog::info("signal {}: {} draining for {}, then shutting down", sig, tail.service,
               absl::FormatDuration(tail.drain_delay));
  readiness.Drain(absl::StrCat("signal ", sig));
  if (tail.drain) tail.drain();
  clock.SleepUntil(signalled + tail.drain_delay);
  for (const std::function<void()>& step : tail.shutdown) step();
  spdlog::info("{} stopped", tail.service);
  return sig;
}

}  // namespace jobwheel
