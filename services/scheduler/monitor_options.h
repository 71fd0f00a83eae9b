#ifndef JOBWHEEL_SERVICES_SCHEDULER_MONITOR_OPTIONS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_MONITOR_OPTIONS_H_

#include "absl/time/time.h"

namespace jobwheel::scheduler {

// The monitors' settings (Monitors::Options): each pass reads the fields of its duty.
struct MonitorOptions {
  // Monitors: a full pass (follow-ups, then delay chains) at least this often.
  absl::Duration interval = absl::Seconds(1);
  // FollowupPass: for executors offline since an unknown time.
  absl::Duration lost_after = absl::Minutes(10);
  absl::Duration pending_timeout = absl::Seconds(60);
  // How long an executor the registry took offline has to reconnect (the same process)
  // before its runs become LOST.
  absl::Duration offline_grace = absl::Milliseconds(500);
  // How long a restarted executor has to replay its spooled results before its
  // predecessor's unfinished runs become LOST.
  absl::Duration restart_grace = absl::Seconds(1);
  // Monitors: added to each grace before a woken pass: the database's clock, which dates the
  // registry's change, may run a little ahead of ours.
  absl::Duration wake_margin = absl::Milliseconds(50);
  // RetentionPass.
  absl::Duration retention = absl::Hours(24 * 30);
  // The audit trail's own retention.
  absl::Duration audit_retention = absl::Hours(24 * 365);
  // Monitors: how often the retention pass runs.
  absl::Duration retention_interval = absl::Minutes(10);
  // Monitors: how often waiting FIX_DELAY jobs are looked at between passes (only while some
  // wait).
  absl::Duration delay_chain_interval = absl::Milliseconds(100);
  // FollowupPass and DelayChainPass: rows per transaction.
  int batch = 500;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_MONITOR_OPTIONS_H_
