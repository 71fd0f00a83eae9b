#ifndef JOBWHEEL_SERVICES_SCHEDULER_REPLICATION_WATCH_H_
#define JOBWHEEL_SERVICES_SCHEDULER_REPLICATION_WATCH_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/pg/pg_pool.h"
#include "common/time/clock.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace jobwheel::scheduler {

// What the primary says about its standbys (pg_stat_replication, synchronous_commit).
struct ReplicationState {
  int standbys = 0;       // Streaming.
  int sync_standbys = 0;  // Streaming with sync_state sync or quorum.
  std::string synchronous_commit;
};

// Whether a failover of this database can lose commits the scheduler was told were durable:
// standbys stream (a failover may promote one), but no commit waits for any of them — no
// synchronous standby, or synchronous_commit off/local. A database without standbys (single,
// or a managed service that hides them) is not reported: it has no failover to lose them in.
bool CommitsCanBeLostInFailover(const ReplicationState& state);

// Reads the state on a pooled connection of the primary.
absl::StatusOr<ReplicationState> ProbeReplication(PgPool& pool);

// Looks at the database's replication every `interval` and exports it:
//   jobwheel_scheduler_db_standbys{sync="true"|"false"}  streaming standbys
//   jobwheel_scheduler_db_async_replication  1 while commits can be lost in a failover
// with a warning logged when that turns true and then at most once per `log_every`. Its loop
// waits on `clock`. Thread-safe.
class ReplicationWatch {
 public:
  using Probe = std::function<absl::StatusOr<ReplicationState>()>;
  struct Options {
    absl::Duration interval = absl::Seconds(10);
    absl::Duration log_every = absl::Minutes(5);
  };

  ReplicationWatch(Options options, Probe probe, prometheus::Registry& registry, Clock& clock);
  ~ReplicationWatch();

  // One look (the loop calls it; tests too). Errors leave the last state exported.
  void Check();
  void Start();
  void Shutdown();

  bool async_replication() const;
  // Warnings logged so far.
  int warnings() const;

 private:
  void Loop();

  const Options options_;
  const Probe probe_;
  Clock& clock_;
  prometheus::Gauge& sync_standbys_;
  prometheus::Gauge& async_standbys_;
  prometheus::Gauge& async_replication_;

  mutable absl::Mutex mu_;
  bool async_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_warning_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int warnings_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_REPLICATION_WATCH_H_
