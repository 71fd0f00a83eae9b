#include "services/scheduler/run_failover.h"

#include <utility>

namespace jobwheel::scheduler {

RunFailover::RunFailover(const std::string& dsn, Monitors& monitors, LostRunKiller::KillFn kill,
                         Clock& clock, SchedulerMetrics& metrics)
    : monitors_(monitors),
      metrics_(metrics),
      killer_(LostRunKiller::Options(), std::move(kill), clock, metrics),
      listener_(
          dsn, ExecutorChangeListener::Options(),
          [this](const ExecutorChange& change) {
            metrics_.executor_events.Increment();
            monitors_.OnExecutorChanged();
            if (!change.address.empty()) killer_.OnExecutorChanged(change.app, change.address);
          },
          clock) {
  monitors_.SetLostRunsListener(
      [this](const std::vector<FireStore::LostRun>& runs) { killer_.Add(runs); });
}

void RunFailover::Start() {
  killer_.Start();
  listener_.Start();
}

void RunFailover::Shutdown() {
  listener_.Shutdown();
  killer_.Shutdown();
}

}  // namespace jobwheel::scheduler
