#ifndef JOBWHEEL_SERVICES_SCHEDULER_SCHEDULE_LOCK_H_
#define JOBWHEEL_SERVICES_SCHEDULER_SCHEDULE_LOCK_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pqxx/pqxx"

namespace jobwheel::scheduler {

// One schedule lock: a session-level PostgreSQL advisory lock on a dedicated connection, and
// the fencing epoch its holder records in `leadership`. Acquire takes it (and bumps the
// epoch); Fence runs a transaction on the lock-holding session, so the transaction cannot
// commit once the session — and with it the lock — is gone; Confirm checks that the session
// still answers and still holds the lock; Release gives it back. What is done under the lock
// (electing, firing) is the caller's: a replica may hold several locks, one object each.
//
// The session must be PostgreSQL's own. A connection pooler in transaction or statement mode
// (PgBouncer's pool_mode=transaction) hands each transaction to whichever server connection
// is free, so the session that took the lock is not the one the next transaction runs on;
// Acquire detects such a pooler before it takes the lock and refuses (FAILED_PRECONDITION),
// and Confirm and Fence refuse once the backend behind the connection changes. The connection
// is never silently reopened: a lost session ends the hold (held() false).
//
// Not thread-safe: the caller serialises every call (libpqxx connections are not thread-safe).
class ScheduleLock {
 public:
  struct Options {
    std::string dsn;
    int64_t key = 0;
    // Recorded as the holder in `leadership`.
    std::string holder_id;
  };
  // How an acquisition went: `held` false when another session holds the lock.
  struct Acquired {
    bool held = false;
    int64_t epoch = 0;
    absl::Time since = absl::InfinitePast();
  };

  explicit ScheduleLock(Options options);
  ~ScheduleLock();
  ScheduleLock(const ScheduleLock&) = delete;
  ScheduleLock& operator=(const ScheduleLock&) = delete;

  // Connects when needed, then tries the lock once; when taken, records this holder with the
  // next epoch. UNAVAILABLE when the database cannot be reached (the connection is dropped),
  // FAILED_PRECONDITION when a pooler sits in between (see above).
  absl::StatusOr<Acquired> TryAcquire();
  // While held: the session answers and its backend is the one that took the lock. An error
  // ends the hold (the connection is closed: the server releases the lock if it still can).
  absl::Status Confirm();
  // While held: `fn` in a transaction on the lock session. FAILED_PRECONDITION when not held.
  // When the session is lost (UNAVAILABLE, or the connection closed) the hold ends: lost()
  // is true until the next TryAcquire.
  absl::Status Fence(absl::string_view what, const std::function<void(pqxx::work&)>& fn);
  // Gives the lock back (if held) and closes the connection.
  void Release();
  // Ends the hold at once and closes the connection, without a query (the server releases
  // the lock when it sees the session end).
  void Drop();

  // While not held: `fn` on the lock connection outside a transaction, to look at the holder.
  // UNAVAILABLE (connection dropped) when the database cannot be reached.
  absl::Status Inspect(const std::function<void(pqxx::nontransaction&)>& fn);

  bool held() const { return held_; }
  // The last Fence or Confirm lost the session.
  bool lost() const { return lost_; }
  int64_t epoch() const { return epoch_; }
  int64_t key() const { return options_.key; }

 private:
  absl::Status EnsureConnected();
  // FAILED_PRECONDITION when the session is not pinned to one backend (a pooler).
  absl::Status CheckPinned();
  // The backend pid behind the connection now.
  int64_t BackendPid();

  const Options options_;
  std::unique_ptr<pqxx::connection> conn_;
  bool held_ = false;
  bool lost_ = false;
  int64_t epoch_ = 0;
  int64_t backend_pid_ = 0;
};

// The message of the refusal when the lock's session is not pinned (names the pooler).
std::string NotPinnedMessage(int64_t before, int64_t after);

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_SCHEDULE_LOCK_H_
