#ifndef JOBWHEEL_SERVICES_SCHEDULER_EXECUTOR_CHANGES_H_
#define JOBWHEEL_SERVICES_SCHEDULER_EXECUTOR_CHANGES_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/pg/pg_listener.h"
#include "common/time/clock.h"

namespace jobwheel::scheduler {

// The registry announces every executor row it changes (registration, going offline, lease
// expiry) with pg_notify on this channel, in the transaction that changes it, with the payload
// "e|<unix micros>|<app>|<address>" ("a|<unix micros>|<app>" for app rows).
inline constexpr char kExecutorChangeChannel[] = "jobwheel_executors";

// One announced executor row; both empty: anything may have changed (the subscription was
// (re)made, so announcements may have been missed).
struct ExecutorChange {
  std::string app;
  std::string address;
};

// Parses an executor row's payload; false for app rows and malformed payloads.
bool ParseExecutorChange(const std::string& payload, ExecutorChange* change);

// Follows the registry's announcements on a connection of its own (LISTEN) and calls
// `on_change` on its thread for each executor row, and with an empty ExecutorChange after
// each (re)subscription. A lost connection is made again after `reconnect_delay`. This is how
// the leader learns at once that an executor went offline or registered again.
class ExecutorChangeListener {
 public:
  using OnChange = std::function<void(const ExecutorChange&)>;
  struct Options {
    absl::Duration reconnect_delay = absl::Seconds(1);
    // How long one wait for notifications may block (bounds Shutdown).
    absl::Duration poll = absl::Milliseconds(500);
  };

  ExecutorChangeListener(std::string dsn, Options options, OnChange on_change, Clock& clock);
  ~ExecutorChangeListener();

  void Start();
  void Shutdown();

 private:
  void Loop();
  bool stopping() const;

  PgListener listener_;  // Used by the loop's thread only (and Shutdown once it joined).
  const Options options_;
  const OnChange on_change_;
  Clock& clock_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_EXECUTOR_CHANGES_H_
