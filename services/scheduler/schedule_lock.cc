#include "services/scheduler/schedule_lock.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/pg/pg_errors.h"
#include "common/pg/pg_pool.h"
#include "common/time/proto_time.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {

std::string NotPinnedMessage(int64_t before, int64_t after) {
  return absl::StrCat(
      "the schedule lock needs a database session of its own, but its transactions run on "
      "different PostgreSQL backends (pid ",
      before, ", then ", after,
      "): a connection pooler in transaction or statement mode (PgBouncer with "
      "pool_mode=transaction) sits between the scheduler and PostgreSQL, and a session "
      "advisory lock does not survive it. Point the scheduler's --db_dsn at PostgreSQL itself "
      "(or a session-mode pool); refusing leadership");
}

ScheduleLock::ScheduleLock(Options options) : options_(std::move(options)) {}

ScheduleLock::~ScheduleLock() { Drop(); }

int64_t ScheduleLock::BackendPid() {
  pqxx::nontransaction ntx(*conn_);
  return ntx.exec("SELECT pg_backend_pid()")[0][0].as<int64_t>();
}

absl::Status ScheduleLock::CheckPinned() {
  // A second connection holds a transaction open while this one asks for its backend again.
  // Through PostgreSQL (or a session-mode pool) each connection keeps its own backend. Behind
  // a transaction-mode pool this connection's backend is free between transactions: the
  // probe's transaction gets it (PgBouncer reuses the last-used server connection), or, when
  // it gets another, this connection's next statement may land elsewhere.
  const int64_t mine = BackendPid();
  auto probe = PgPool::Connect(options_.dsn);
  if (!probe.ok()) return probe.status();
  pqxx::work ptx(**probe);
  const int64_t theirs = ptx.exec("SELECT pg_backend_pid()")[0][0].as<int64_t>();
  if (theirs == mine) return absl::FailedPreconditionError(NotPinnedMessage(mine, theirs));
  const int64_t again = BackendPid();
  ptx.abort();
  if (again != mine) return absl::FailedPreconditionError(NotPinnedMessage(mine, again));
  backend_pid_ = mine;
  return absl::OkStatus();
}

absl::Status ScheduleLock::EnsureConnected() {
  if (conn_ != nullptr && conn_->is_open()) return absl::OkStatus();
  conn_.reset();
  absl::StatusOr<std::unique_ptr<pqxx::connection>> conn = PgPool::Connect(options_.dsn);
  if (!conn.ok()) return conn.status();
  conn_ = std::move(conn).value();
  // libpqxx would otherwise reopen a broken connection at the next transaction — a new
  // session that does not hold the lock, on whichever server is primary by then.
  conn_->inhibit_reactivation(true);
  try {
    // The lock is only released when the server ends this session. A leader killed on this
    // host closes its socket and the server notices at once; a leader whose node dies or is
    // cut off sends nothing more, and with the OS defaults (2 h keepalive idle) the server
    // would keep the session — and the lock — for hours: no standby could take over. So the
    // server probes this session after 2 s idle and drops it after 3 unanswered probes 1 s
    // apart, or when data it sent stays unacknowledged for 5 s. The peer's kernel answers
    // probes, so a busy but alive leader is never dropped. (Ignored over Unix sockets.)
    pqxx::nontransaction ntx(*conn_);
    ntx.exec(
        "SET tcp_keepalives_idle = 2; SET tcp_keepalives_interval = 1; "
        "SET tcp_keepalives_count = 3; SET tcp_user_timeout = 5000");
    ntx.commit();
    absl::Status pinned = CheckPinned();
    if (!pinned.ok()) {
      conn_.reset();
      return pinned;
    }
  } catch (const std::exception& e) {
    conn_.reset();
    return absl::UnavailableError(absl::StrCat("cannot connect to database: ", e.what()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ScheduleLock::Acquired> ScheduleLock::TryAcquire() {
  lost_ = false;
  if (absl::Status s = EnsureConnected(); !s.ok()) return s;
  Acquired out;
  try {
    pqxx::nontransaction ntx(*conn_);
    pqxx::result r = ntx.exec("SELECT pg_try_advisory_lock(" + std::to_string(options_.key) + ")");
    if (!r[0][0].as<bool>()) return out;
  } catch (const std::exception& e) {
    conn_.reset();
    return absl::UnavailableError(e.what());
  }
  try {
    pqxx::work tx(*conn_);
    pqxx::result r = tx.exec_params(
        "INSERT INTO leadership (id, holder_id, since, epoch) VALUES (1, $1, now(), 1) "
        "ON CONFLICT (id) DO UPDATE SET holder_id = $1, since = now(), "
        "epoch = leadership.epoch + 1 "
        "RETURNING epoch, (EXTRACT(EPOCH FROM since) * 1000000)::BIGINT",
        options_.holder_id);
    out.epoch = r[0][0].as<int64_t>();
    out.since = FromMicros(r[0][1].as<int64_t>());
    tx.commit();
  } catch (const std::exception& e) {
    conn_.reset();  // Closing the session releases the lock.
    return absl::UnavailableError(absl::StrCat("recording the new epoch failed: ", e.what()));
  }
  out.held = true;
  held_ = true;
  epoch_ = out.epoch;
  return out;
}

absl::Status ScheduleLock::Confirm() {
  if (!held_ || conn_ == nullptr) return absl::FailedPreconditionError("schedule lock not held");
  try {
    pqxx::nontransaction ntx(*conn_);
    pqxx::result r = ntx.exec_params(
        "SELECT pg_backend_pid(), EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
        "AND granted AND pid = pg_backend_pid() AND "
        "((classid::bigint << 32) | objid::bigint) = $1)",
        options_.key);
    const int64_t pid = r[0][0].as<int64_t>();
    if (pid != backend_pid_) {
      Drop();
      lost_ = true;
      return absl::FailedPreconditionError(NotPinnedMessage(backend_pid_, pid));
    }
    if (!r[0][1].as<bool>()) {
      Drop();
      lost_ = true;
      return absl::UnavailableError("the lock session no longer holds the schedule lock");
    }
  } catch (const std::exception& e) {
    Drop();
    lost_ = true;
    return absl::UnavailableError(e.what());
  }
  return absl::OkStatus();
}

absl::Status ScheduleLock::Fence(absl::string_view what,
                                 const std::function<void(pqxx::work&)>& fn) {
  if (!held_ || conn_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": schedule lock not held"));
  }
  try {
    pqxx::work tx(*conn_);
    fn(tx);
    tx.commit();
  } catch (const std::exception& e) {
    absl::Status status = PgErrorToStatus(e, what);
    if (status.code() == absl::StatusCode::kUnavailable || !conn_->is_open()) {
      Drop();
      lost_ = true;
    }
    return status;
  }
  return absl::OkStatus();
}

void ScheduleLock::Release() {
  if (held_ && conn_ != nullptr) {
    try {
      pqxx::nontransaction tx(*conn_);
      tx.exec("SELECT pg_advisory_unlock(" + std::to_string(options_.key) + ")");
    } catch (const std::exception& e) {
      spdlog::warn("releasing the schedule lock: {}", e.what());
    }
  }
  Drop();
}

void ScheduleLock::Drop() {
  held_ = false;
  conn_.reset();
}

absl::Status ScheduleLock::Inspect(const std::function<void(pqxx::nontransaction&)>& fn) {
  if (absl::Status s = EnsureConnected(); !s.ok()) return s;
  try {
    pqxx::nontransaction ntx(*conn_);
    fn(ntx);
  } catch (const std::exception& e) {
    conn_.reset();
    return absl::UnavailableError(e.what());
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::scheduler
