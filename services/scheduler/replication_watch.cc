#include "services/scheduler/replication_watch.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {

bool CommitsCanBeLostInFailover(const ReplicationState& state) {
  if (state.standbys == 0) return false;
  if (state.synchronous_commit == "off" || state.synchronous_commit == "local") return true;
  return state.sync_standbys == 0;
}

absl::StatusOr<ReplicationState> ProbeReplication(PgPool& pool) {
  ReplicationState state;
  absl::Status s = pool.Run("replication_state", [&state](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec(
        "SELECT count(*) FILTER (WHERE state = 'streaming'), "
        "count(*) FILTER (WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')), "
        "current_setting('synchronous_commit') FROM pg_stat_replication");
    state.standbys = r[0][0].as<int>();
    state.sync_standbys = r[0][1].as<int>();
    state.synchronous_commit = r[0][2].as<std::string>();
  });
  if (!s.ok()) return s;
  return state;
}

namespace {

prometheus::Family<prometheus::Gauge>& StandbysFamily(prometheus::Registry& registry) {
  return prometheus::BuildGauge()
      .Name("jobwheel_scheduler_db_standbys")
      .Help("Standbys streaming from the database's primary, by whether commits wait for them")
      .Register(registry);
}

}  // namespace

ReplicationWatch::ReplicationWatch(Options options, Probe probe, prometheus::Registry& registry,
                                   Clock& clock)
    : options_(options),
      probe_(std::move(probe)),
      clock_(clock),
      sync_standbys_(StandbysFamily(registry).Add({{"sync", "true"}})),
      async_standbys_(StandbysFamily(registry).Add({{"sync", "false"}})),
      async_replication_(prometheus::BuildGauge()
                             .Name("jobwheel_scheduler_db_async_replication")
                             .Help("1 while the database has standbys but no commit waits for "
                                   "one: a failover can lose fires and results "
                                   "(docs/database.md)")
                             .Register(registry)
                             .Add({})) {}

ReplicationWatch::~ReplicationWatch() { Shutdown(); }

void ReplicationWatch::Check() {
  absl::StatusOr<ReplicationState> state = probe_();
  if (!state.ok()) return;
  const bool async = CommitsCanBeLostInFailover(*state);
  sync_standbys_.Set(state->sync_standbys);
  async_standbys_.Set(state->standbys - state->sync_standbys);
  async_replication_.Set(async ? 1 : 0);
  absl::MutexLock lock(&mu_);
  const bool turned = async && !async_;
  async_ = async;
  if (!async) return;
  const absl::Time now = clock_.Now();
  if (!turned && now - last_warning_ < options_.log_every) return;
  last_warning_ = now;
  ++warnings_;
  spdlog::warn(
      "database replication is asynchronous: {} standby(s) stream, {} synchronous, "
      "synchronous_commit={}; a failover to a standby can lose committed fires and results "
      "(and run them again): configure a synchronous standby (Patroni synchronous_mode, "
      "CloudNativePG minSyncReplicas), see docs/database.md",
      state->standbys, state->sync_standbys, state->synchronous_commit);
}

void ReplicationWatch::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ReplicationWatch::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ReplicationWatch::Loop() {
  while (true) {
    Check();
    absl::MutexLock lock(&mu_);
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping_), clock_.Now() + options_.interval);
    if (stopping_) return;
  }
}

bool ReplicationWatch::async_replication() const {
  absl::MutexLock lock(&mu_);
  return async_;
}

int ReplicationWatch::warnings() const {
  absl::MutexLock lock(&mu_);
  return warnings_;
}

}  // namespace jobwheel::scheduler
