#ifndef JOBWHEEL_COMMON_PG_PG_POOL_H_
#define JOBWHEEL_COMMON_PG_PG_POOL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "pqxx/pqxx"

namespace jobwheel {

// A bounded pool of PostgreSQL connections. Connections are opened lazily and replaced when
// broken, so a restarted database is picked up by the next call. The DSN may name several
// hosts (host=a,b port=p1,p2 target_session_attrs=read-write): libpq connects to the one that
// is primary, so after a failover the replacements find the new primary. When a connection
// fails as unavailable (lost, or the server no longer writable: a demoted primary answers
// 25006), it and every idle connection are dropped — they point at the same old server — and
// after a failed connect, calls within a backoff (50 ms doubling to 1 s) fail fast instead of
// each trying again. Thread-safe.
class PgPool {
 public:
  // Called after every Run with its duration and whether it succeeded (for metrics).
  using Observer = std::function<void(absl::string_view what, absl::Duration, bool ok)>;

  // How PostgreSQL plans the prepared statements (pg_prepared.h) of a connection.
  enum class PlanMode {
    // Planned for their actual arguments on every execution: safe for any statement, but the
    // planning is repeated each time.
    kCustom,
    // Planned once per connection, with sequential scans, hash and merge joins ruled out, so
    // the cached plan can only look rows up through indexes. For connections whose every
    // statement selects rows by key (the dispatcher's fire path): a generic plan made while a
    // table was small or its statistics stale would otherwise scan the whole table forever.
    kIndexLookups,
  };

  // `clock` times the queries for `observer` and the wait for a free connection.
  PgPool(std::string dsn, int size, Observer observer = nullptr,
         PlanMode plan_mode = PlanMode::kCustom, Clock& clock = RealClock::Get());
  ~PgPool();

  // Runs `fn` on a pooled connection. libpqxx exceptions become statuses (see pg_errors.h);
  // `what` names the operation in error messages. Waits up to `wait` for a free connection.
  absl::Status Run(absl::string_view what, const std::function<void(pqxx::connection&)>& fn,
                   absl::Duration wait = absl::Seconds(10));

  // Opens a connection outside the pool (e.g. for LISTEN or the schedule lock).
  static absl::StatusOr<std::unique_ptr<pqxx::connection>> Connect(
      const std::string& dsn, PlanMode plan_mode = PlanMode::kCustom);

  const std::string& dsn() const { return dsn_; }

 private:
  const std::string dsn_;
  const int size_;
  const Observer observer_;
  const PlanMode plan_mode_;
  Clock& clock_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_ ABSL_GUARDED_BY(mu_);
  int in_use_ ABSL_GUARDED_BY(mu_) = 0;
  // After a failed connect: no new connection is tried before reconnect_after_.
  absl::Duration backoff_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::Time reconnect_after_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::string last_connect_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_PG_PG_POOL_H_
