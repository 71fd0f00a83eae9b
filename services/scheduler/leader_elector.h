#ifndef JOBWHEEL_SERVICES_SCHEDULER_LEADER_ELECTOR_H_
#define JOBWHEEL_SERVICES_SCHEDULER_LEADER_ELECTOR_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "pqxx/pqxx"
#include "services/scheduler/schedule_lock.h"

namespace jobwheel::scheduler {

// Who holds the schedule lock, as recorded in the `leadership` table.
struct LeaderInfo {
  std::string holder_id;  // Empty when no replica holds the lock.
  absl::Time since = absl::InfinitePast();
  int64_t epoch = 0;
};

// Races for the schedule lock (ScheduleLock: a session advisory lock and its fencing epoch).
// The holder is leader. All of the leader's writes run on the lock-holding session through
// RunFenced, so once the session is gone (connection lost, server restarted or failed over,
// session killed) they fail and leadership ends at once. Standbys retry every `retry_interval`, and
// each try also reads who holds the lock, so every replica knows the leader from memory
// (`Leader()`), never from a query per caller. Its loop waits on `clock`. Thread-safe.
class LeaderElector {
 public:
  struct Options {
    std::string dsn;
    std::string replica_id;
    absl::Duration retry_interval = absl::Milliseconds(500);
    // How often the leader checks that its session is alive when idle.
    absl::Duration check_interval = absl::Milliseconds(200);
    int64_t lock_key = 0x6a77736368656431;  // "jwsched1"
    // A standby ends the lock holder's session when that session has been silent this long
    // (not running a query, no statement started): a leader that is frozen (SIGSTOP, a VM
    // pause) but whose socket is alive would otherwise keep the lock until it wakes up.
    // A live leader touches its session every check_interval. Zero disables.
    absl::Duration takeover_after = absl::Seconds(4);
    // The leader stops claiming leadership (Leader() is UNAVAILABLE) once its lock session has
    // not answered for this long: cut off from the database (a partition, a failover), it may
    // already have lost the lock without its socket telling it. Shorter than takeover_after, so
    // no two replicas claim at once. Zero disables.
    absl::Duration unconfirmed_after = absl::Seconds(2);
    // Start() waits at most this long for the first try of the lock, so a replica that starts
    // serving right after Start() already knows the leader (GetLeader) in the normal case.
    absl::Duration first_look_timeout = absl::Seconds(5);
  };
  // Called on the elector thread. on_elected runs before any RunFenced succeeds for the new
  // term; on_deposed runs after leadership ended (no RunFenced succeeds afterwards).
  struct Callbacks {
    std::function<void(int64_t epoch)> on_elected;
    std::function<void()> on_deposed;
  };

  LeaderElector(Options options, Callbacks callbacks, Clock& clock);
  ~LeaderElector();

  // Starts the election thread and waits (up to first_look_timeout) for its first try.
  void Start();
  // The same with the callbacks given here (replacing the constructor's): for a main whose
  // leader work is built on this elector, so it exists only after it.
  void Start(Callbacks callbacks);
  // Releases the lock (if held) and joins. Idempotent.
  void Shutdown();

  bool is_leader() const;
  int64_t epoch() const;
  const std::string& replica_id() const { return options_.replica_id; }

  // Runs `fn` in a transaction on the lock-holding session. FAILED_PRECONDITION when this
  // replica is not the leader; when the session is broken, leadership ends and the error is
  // returned. `fn` must not keep the connection.
  absl::Status RunFenced(absl::string_view what, const std::function<void(pqxx::work&)>& fn);

  // Who holds the lock, as this replica's loop last saw it: itself while it leads; on a
  // standby, what its last try (every retry_interval) read. UNAVAILABLE while this replica
  // cannot reach the database or has just lost the lock and not yet looked again. Never
  // touches the database: cheap enough for any caller, any rate. On the leader: UNAVAILABLE
  // once its lock session has not answered for unconfirmed_after.
  absl::StatusOr<LeaderInfo> Leader() const;

 private:
  void Loop();
  bool TryAcquire() ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_);
  // Ends the holder's session if it has been silent longer than takeover_after.
  void EndSilentHolder(pqxx::nontransaction& ntx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_);
  void Depose(absl::string_view why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_);
  // On a standby after a failed try: reads the holder into the snapshot.
  void ReadHolder(pqxx::nontransaction& ntx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(conn_mu_);
  void SetLeader(absl::StatusOr<LeaderInfo> leader) ABSL_LOCKS_EXCLUDED(leader_mu_);
  // The lock session just answered (a check, a fenced transaction, the takeover).
  void Confirmed() ABSL_LOCKS_EXCLUDED(leader_mu_);
  bool stopping() const;

  const Options options_;
  Callbacks callbacks_;  // Set before the thread starts, read only by it afterwards.
  Clock& clock_;

  // Guards the lock and its dedicated connection: libpqxx connections are not thread-safe.
  mutable absl::Mutex conn_mu_;
  ScheduleLock lock_ ABSL_GUARDED_BY(conn_mu_);
  absl::Time last_refusal_log_ ABSL_GUARDED_BY(conn_mu_) = absl::InfinitePast();

  // The snapshot Leader() returns; its own mutex so readers never wait for a query.
  mutable absl::Mutex leader_mu_;
  absl::StatusOr<LeaderInfo> leader_info_ ABSL_GUARDED_BY(leader_mu_) =
      absl::UnavailableError("the schedule lock has not been tried yet");
  absl::Time confirmed_at_ ABSL_GUARDED_BY(leader_mu_) = absl::InfinitePast();

  mutable absl::Mutex state_mu_;
  bool stopping_ ABSL_GUARDED_BY(state_mu_) = false;
  // The first try of the lock is done (leader known or not).
  bool first_look_ ABSL_GUARDED_BY(state_mu_) = false;
  std::thread thread_;
  bool started_ = false;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_LEADER_ELECTOR_H_
