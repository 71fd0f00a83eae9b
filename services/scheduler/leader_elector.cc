#include "services/scheduler/leader_elector.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/pg/pg_errors.h"
#include "common/pg/pg_pool.h"
#include "common/time/proto_time.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {

LeaderElector::LeaderElector(Options options, Callbacks callbacks, Clock& clock)
    : options_(std::move(options)), callbacks_(std::move(callbacks)), clock_(clock) {}

LeaderElector::~LeaderElector() { Shutdown(); }

void LeaderElector::Start() {
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
  absl::MutexLock lock(&state_mu_);
  clock_.AwaitWithDeadline(&state_mu_, absl::Condition(&first_look_),
                           clock_.Now() + options_.first_look_timeout);
}

bool LeaderElector::stopping() const {
  absl::MutexLock lock(&state_mu_);
  return stopping_;
}

void LeaderElector::Shutdown() {
  if (!started_) return;
  started_ = false;
  {
    absl::MutexLock lock(&state_mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  bool was_leader = false;
  {
    absl::MutexLock lock(&conn_mu_);
    was_leader = leader_;
    if (leader_) {
      try {
        pqxx::nontransaction tx(*conn_);
        tx.exec("SELECT pg_advisory_unlock(" + std::to_string(options_.lock_key) + ")");
      } catch (const std::exception& e) {
        spdlog::warn("releasing the schedule lock: {}", e.what());
      }
      leader_ = false;
    }
    conn_.reset();
  }
  SetLeader(
      absl::UnavailableError(absl::StrCat("replica ", options_.replica_id, " is shutting down")));
  if (was_leader && callbacks_.on_deposed) callbacks_.on_deposed();
}

bool LeaderElector::is_leader() const {
  absl::MutexLock lock(&conn_mu_);
  return leader_;
}

int64_t LeaderElector::epoch() const {
  absl::MutexLock lock(&conn_mu_);
  return epoch_;
}

absl::StatusOr<LeaderInfo> LeaderElector::Leader() const {
  absl::MutexLock lock(&leader_mu_);
  if (leader_info_.ok() && leader_info_->holder_id == options_.replica_id &&
      options_.unconfirmed_after > absl::ZeroDuration()) {
    const absl::Duration silent = clock_.Now() - confirmed_at_;
    if (silent > options_.unconfirmed_after) {
      return absl::UnavailableError(absl::StrCat(
          "replica ", options_.replica_id, " held the schedule lock, but its database session has ",
          "not answered for ", absl::FormatDuration(absl::Trunc(silent, absl::Milliseconds(1))),
          ": leadership unconfirmed"));
    }
  }
  return leader_info_;
}

void LeaderElector::Confirmed() {
  absl::MutexLock lock(&leader_mu_);
  confirmed_at_ = clock_.Now();
}

void LeaderElector::SetLeader(absl::StatusOr<LeaderInfo> leader) {
  absl::MutexLock lock(&leader_mu_);
  leader_info_ = std::move(leader);
}

namespace {

absl::Status NoDatabase(absl::string_view replica, absl::string_view why) {
  return absl::UnavailableError(
      absl::StrCat("replica ", replica, " cannot reach the database, leader unknown: ", why));
}

}  // namespace

bool LeaderElector::TryAcquire() {
  if (conn_ == nullptr || !conn_->is_open()) {
    absl::StatusOr<std::unique_ptr<pqxx::connection>> conn = PgPool::Connect(options_.dsn);
    if (!conn.ok()) {
      spdlog::warn("schedule lock: {}", conn.status().ToString());
      SetLeader(NoDatabase(options_.replica_id, conn.status().message()));
      conn_.reset();
      return false;
    }
    conn_ = std::move(conn).value();
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
    } catch (const std::exception& e) {
      spdlog::warn("schedule lock: cannot connect to database: {}", e.what());
      SetLeader(NoDatabase(options_.replica_id, e.what()));
      conn_.reset();
      return false;
    }
  }
  try {
    bool acquired = false;
    {
      pqxx::nontransaction ntx(*conn_);
      pqxx::result r =
          ntx.exec("SELECT pg_try_advisory_lock(" + std::to_string(options_.lock_key) + ")");
      acquired = r[0][0].as<bool>();
    }
    if (!acquired) {
      EndSilentHolder();
      ReadHolder();
      return false;
    }
  } catch (const std::exception& e) {
    spdlog::warn("schedule lock: {}", e.what());
    SetLeader(NoDatabase(options_.replica_id, e.what()));
    conn_.reset();
    return false;
  }
  LeaderInfo mine;
  try {
    pqxx::work tx(*conn_);
    pqxx::result r = tx.exec_params(
        "INSERT INTO leadership (id, holder_id, since, epoch) VALUES (1, $1, now(), 1) "
        "ON CONFLICT (id) DO UPDATE SET holder_id = $1, since = now(), "
        "epoch = leadership.epoch + 1 "
        "RETURNING epoch, (EXTRACT(EPOCH FROM since) * 1000000)::BIGINT",
        options_.replica_id);
    epoch_ = r[0][0].as<int64_t>();
    mine.since = FromMicros(r[0][1].as<int64_t>());
    tx.commit();
  } catch (const std::exception& e) {
    spdlog::warn("schedule lock: recording the new epoch failed: {}", e.what());
    SetLeader(NoDatabase(options_.replica_id, e.what()));
    conn_.reset();  // Closing the session releases the lock.
    return false;
  }
  mine.holder_id = options_.replica_id;
  mine.epoch = epoch_;
  Confirmed();
  SetLeader(std::move(mine));
  leader_ = true;
  return true;
}

void LeaderElector::Depose(absl::string_view why) {
  if (!leader_) return;
  spdlog::error("lost the schedule lock (epoch {}): {}", epoch_, std::string(why));
  leader_ = false;
  conn_.reset();
  SetLeader(absl::UnavailableError(
      absl::StrCat("replica ", options_.replica_id,
                   " lost the schedule lock and has not yet seen who holds it")));
}

void LeaderElector::ReadHolder() {
  pqxx::nontransaction ntx(*conn_);
  // The lock is the truth; the table says who took it last (a new holder records itself
  // right after taking the lock, so the next try sees it).
  pqxx::result r = ntx.exec_params(
      "SELECT holder_id, (EXTRACT(EPOCH FROM since) * 1000000)::BIGINT, epoch, "
      "EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND "
      "((classid::bigint << 32) | objid::bigint) = $1) "
      "FROM leadership WHERE id = 1",
      options_.lock_key);
  LeaderInfo info;
  if (!r.empty()) {
    info.epoch = r[0][2].as<int64_t>();
    if (r[0][3].as<bool>()) {
      info.holder_id = r[0][0].as<std::string>();
      info.since = FromMicros(r[0][1].as<int64_t>());
    }
  }
  SetLeader(std::move(info));
}

void LeaderElector::EndSilentHolder() {
  if (options_.takeover_after <= absl::ZeroDuration()) return;
  pqxx::nontransaction ntx(*conn_);
  // 'active' means the server is working for the holder: it is alive, however long that takes.
  pqxx::result r = ntx.exec_params(
      "SELECT a.pid, EXTRACT(EPOCH FROM now() - GREATEST(a.query_start, a.state_change))::FLOAT8 "
      "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
      "WHERE l.locktype = 'advisory' AND l.granted AND "
      "((l.classid::bigint << 32) | l.objid::bigint) = $1 AND a.state <> 'active' AND "
      "now() - GREATEST(a.query_start, a.state_change) > make_interval(secs => $2)",
      options_.lock_key, absl::ToDoubleSeconds(options_.takeover_after));
  for (const pqxx::row& row : r) {
    spdlog::warn("schedule lock holder (backend pid {}) silent for {:.1f} s: ending its session",
                 row[0].as<int64_t>(), row[1].as<double>());
    ntx.exec_params("SELECT pg_terminate_backend($1)", row[0].as<int64_t>());
  }
}

void LeaderElector::Loop() {
  while (!stopping()) {
    bool elected = false;
    bool deposed = false;
    int64_t epoch = 0;
    {
      absl::MutexLock lock(&conn_mu_);
      if (!leader_) {
        elected = TryAcquire();
        epoch = epoch_;
      } else {
        // An idle leader still notices a dead session within check_interval.
        try {
          pqxx::nontransaction ntx(*conn_);
          ntx.exec("SELECT 1");
          Confirmed();
        } catch (const std::exception& e) {
          Depose(e.what());
          deposed = true;
        }
      }
    }
    {
      absl::MutexLock lock(&state_mu_);
      first_look_ = true;
    }
    if (elected) {
      spdlog::info("replica {} is leader, epoch {}", options_.replica_id, epoch);
      if (callbacks_.on_elected) callbacks_.on_elected(epoch);
    }
    if (deposed && callbacks_.on_deposed) callbacks_.on_deposed();
    const bool leader = is_leader();
    absl::MutexLock lock(&state_mu_);
    clock_.AwaitWithDeadline(
        &state_mu_, absl::Condition(&stopping_),
        clock_.Now() + (leader ? options_.check_interval : options_.retry_interval));
  }
}

absl::Status LeaderElector::RunFenced(absl::string_view what,
                                      const std::function<void(pqxx::work&)>& fn) {
  bool deposed = false;
  absl::Status status;
  {
    absl::MutexLock lock(&conn_mu_);
    if (!leader_ || conn_ == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": replica ", options_.replica_id, " is not the leader"));
    }
    try {
      pqxx::work tx(*conn_);
      fn(tx);
      tx.commit();
      Confirmed();
    } catch (const std::exception& e) {
      status = PgErrorToStatus(e, what);
      if (status.code() == absl::StatusCode::kUnavailable || !conn_->is_open()) {
        Depose(e.what());
        deposed = true;
      }
    }
  }
  if (deposed && callbacks_.on_deposed) callbacks_.on_deposed();
  return status;
}

}  // namespace jobwheel::scheduler
