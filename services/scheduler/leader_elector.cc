#include "services/scheduler/leader_elector.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {

LeaderElector::LeaderElector(Options options, Callbacks callbacks, Clock& clock)
    : options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      clock_(clock),
      lock_({options_.dsn, options_.lock_key, options_.replica_id}) {}

LeaderElector::~LeaderElector() { Shutdown(); }

void LeaderElector::Start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  Start();
}

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
    was_leader = lock_.held();
    lock_.Release();
  }
  SetLeader(
      absl::UnavailableError(absl::StrCat("replica ", options_.replica_id, " is shutting down")));
  if (was_leader && callbacks_.on_deposed) callbacks_.on_deposed();
}

bool LeaderElector::is_leader() const {
  absl::MutexLock lock(&conn_mu_);
  return lock_.held();
}

int64_t LeaderElector::epoch() const {
  absl::MutexLock lock(&conn_mu_);
  return lock_.epoch();
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
  absl::StatusOr<ScheduleLock::Acquired> acquired = lock_.TryAcquire();
  if (!acquired.ok()) {
    if (acquired.status().code() == absl::StatusCode::kFailedPrecondition) {
      // A pooler: refused for as long as it stays. Said once a minute, not every try.
      if (clock_.Now() - last_refusal_log_ > absl::Minutes(1)) {
        spdlog::error("schedule lock: {}", std::string(acquired.status().message()));
        last_refusal_log_ = clock_.Now();
      }
      SetLeader(absl::FailedPreconditionError(
          absl::StrCat("replica ", options_.replica_id, ": ", acquired.status().message())));
      return false;
    }
    spdlog::warn("schedule lock: {}", acquired.status().ToString());
    SetLeader(NoDatabase(options_.replica_id, acquired.status().message()));
    return false;
  }
  if (!acquired->held) {
    absl::Status looked = lock_.Inspect([this](pqxx::nontransaction& ntx) {
      EndSilentHolder(ntx);
      ReadHolder(ntx);
    });
    if (!looked.ok()) {
      spdlog::warn("schedule lock: {}", looked.ToString());
      SetLeader(NoDatabase(options_.replica_id, looked.message()));
    }
    return false;
  }
  LeaderInfo mine;
  mine.since = acquired->since;
  mine.holder_id = options_.replica_id;
  mine.epoch = acquired->epoch;
  Confirmed();
  SetLeader(std::move(mine));
  return true;
}

void LeaderElector::Depose(absl::string_view why) {
  spdlog::error("lost the schedule lock (epoch {}): {}", lock_.epoch(), std::string(why));
  lock_.Drop();
  SetLeader(absl::UnavailableError(
      absl::StrCat("replica ", options_.replica_id,
                   " lost the schedule lock and has not yet seen who holds it")));
}

void LeaderElector::ReadHolder(pqxx::nontransaction& ntx) {
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

void LeaderElector::EndSilentHolder(pqxx::nontransaction& ntx) {
  if (options_.takeover_after <= absl::ZeroDuration()) return;
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
      if (!lock_.held()) {
        elected = TryAcquire();
        epoch = lock_.epoch();
      } else {
        // An idle leader still notices a dead session (or one that lost the lock, or moved
        // to another backend) within check_interval.
        absl::Status confirmed = lock_.Confirm();
        if (confirmed.ok()) {
          Confirmed();
        } else {
          Depose(confirmed.message());
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
    if (!lock_.held()) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": replica ", options_.replica_id, " is not the leader"));
    }
    status = lock_.Fence(what, fn);
    if (status.ok()) {
      Confirmed();
    } else if (lock_.lost()) {
      Depose(status.message());
      deposed = true;
    }
  }
  if (deposed && callbacks_.on_deposed) callbacks_.on_deposed();
  return status;
}

}  // namespace jobwheel::scheduler
