#include "common/pg/migrations.h"

#include <string>
#include <vector>

#include "common/pg/pg_errors.h"
#include "pqxx/pqxx"

namespace jobwheel {
namespace {

// Key of the transaction-level advisory lock that serializes migrations across replicas.
constexpr int64_t kMigrationLockKey = 0x6a6f62776865656c;  // "jobwheel"

// The schema is a contract between the services. Each table has ONE owning service, which
// creates its rows and decides their lifecycle; every other access is listed with the table below
// and is deliberate (a new one is added to the list, not just written). The services:
// scheduler (the leader's fire engine, services/scheduler/pg_fire_store and leader_elector; the
// admin API of every replica, services/scheduler/admin/pg_job_store), dispatcher
// (services/dispatcher/pg_dispatch_store), registry (services/registry/pg_executor_store and
// pg_app_store), and common/auth/pg_token_store, which every service authenticates through.
//
// Enum values: integer columns hold the proto enum's number, text columns the value's name without
// its type prefix; statements name them through common/pg/sql_enums.h, never as bare numbers, and
// common/pg/migrations_test checks this schema (defaults, partial-index predicates, CHECK
// constraints) against it. Stored rows keep the numbers: a proto value is never renumbered. The
// integer enum columns have no CHECK constraint on purpose: values are checked where they enter
// (job validation, the dispatcher's request validation), and a CHECK would fail a whole batched
// statement, losing the good rows with the bad one.
//
// Exactly once, across services, rests on these row locks and conditional writes:
//  - A fire is dispatched once. The scheduler creates it PENDING, at most once per job and
//    scheduled time (fires_schedule_once) or per parent run and job (fires_followup_once). The
//    dispatcher replica it is handed to locks the fire rows (FOR UPDATE, in id order, so two
//    dispatchers cannot deadlock) and, in the same transaction that inserts the fire's runs,
//    moves it from PENDING to DISPATCHED or FAILED; a fire found not PENDING is a duplicate and
//    reports the runs it has. Every other write to a fire is conditional on PENDING too and
//    waits for that lock: the admin API deleting a job's pending fires, the leader failing a
//    fire whose job was deleted.
//  - A run is created once per fire and shard (runs_fire_shard) and ends once. The dispatcher
//    locks runs in id order before writing trigger answers, reroutes and results, and decides
//    from the locked status. The scheduler writes runs it did not create, each write conditional
//    on the status it expects so the row lock orders it against the dispatcher's: the admin API
//    marks an open run KILLED; the leader's monitors mark RUNNING runs LOST and stale PENDING
//    runs FAILED, and take finished runs FOR UPDATE SKIP LOCKED to set followup_done, so each
//    retry, child fire and alarm is made once (the dispatcher sets followup_done itself for a
//    success that needs none).
//  - A job's schedule advances once. The leader claims due jobs FOR UPDATE SKIP LOCKED and
//    advances next_fire_at with the fires it inserts; the admin API updates a job under FOR UPDATE
//    and, in the same transaction, deletes its not-yet-dispatched schedule fires so the leader
//    writes them anew.
// Advisory locks: kMigrationLockKey below (transaction level, every service at start); the
// scheduler's schedule lock ("jwsched1", session level, LeaderElector: the leader writes only
// through the connection that holds it); the child-job graph lock ("jwchild", transaction level,
// admin API). Notifications: the registry announces apps and executors rows it changes on channel
// jobwheel_executors (registry replicas follow it, and so does the scheduler leader to fail
// over the runs of executors taken offline); no other service notifies.

struct Migration {
  int version;
  const char* sql;
};

// Append only: a released migration never changes.
const std::vector<Migration>& Migrations() {
  static const auto* migrations = new std::vector<Migration>{
      {1,
       // apps. Owner: registry (AppAdminService through PgAppStore: create, update, delete;
       // PgExecutorStore::Register inserts the row of an app an executor registers for). Others:
       // - scheduler admin API (PgJobStore) inserts the row of a job's app when missing (ON
       //   CONFLICT DO NOTHING, so every app with jobs is listed; the row holds the defaults, so
       //   it is not announced) and reads the names for the dashboard's counts (CountJobs).
       // - The registry's delete locks the row (FOR UPDATE) and refuses while the app has jobs:
       //   an owned read of jobs. The admin API's insert does not wait for that lock (DO NOTHING
       //   on an existing row), so a job saved while its app is deleted can outlive the app's row
       //   until the job's next save inserts it again.
       R"sql(
CREATE TABLE apps (
  name TEXT PRIMARY KEY,
  title TEXT NOT NULL DEFAULT '',
  address_type TEXT NOT NULL DEFAULT 'AUTO' CHECK (address_type IN ('AUTO', 'MANUAL')),
  manual_addresses TEXT[] NOT NULL DEFAULT '{}',
  create_time TIMESTAMPTZ NOT NULL DEFAULT now(),
  update_time TIMESTAMPTZ NOT NULL DEFAULT now()
);
)sql"
       // executors. Owner: registry (PgExecutorStore: registration, lease renewal and expiry,
       // going offline; PgAppStore deletes an app's offline rows with the app). Read only by:
       // - scheduler admin API (PgJobStore): a manual trigger's executor_address must be online;
       //   killing a run and reading its log ask whether the run's executor is registered and
       //   online.
       // - scheduler leader (PgFireStore monitors): RUNNING runs whose executor is offline, or
       //   restarted since (label jobwheel.process_start_us), are LOST.
       // Dispatchers do not read it: they follow the registry's WatchExecutors stream.
       R"sql(
-- One row per executor instance the registry has seen; online ones hold a lease.
CREATE TABLE executors (
  app TEXT NOT NULL,
  address TEXT NOT NULL,
  handlers TEXT[] NOT NULL DEFAULT '{}',
  sdk_version TEXT NOT NULL DEFAULT '',
  capacity INT NOT NULL DEFAULT 0,
  labels JSONB NOT NULL DEFAULT '{}',
  allow_scripts BOOLEAN NOT NULL DEFAULT false,
  replica_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  online BOOLEAN NOT NULL DEFAULT true,
  lease_until TIMESTAMPTZ NOT NULL,
  register_time TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_beat_time TIMESTAMPTZ NOT NULL DEFAULT now(),
  running INT NOT NULL DEFAULT 0,
  queued INT NOT NULL DEFAULT 0,
  PRIMARY KEY (app, address)
);
CREATE INDEX executors_lease ON executors (lease_until) WHERE online;
)sql"
       // jobs. Owner: scheduler. The admin API (PgJobStore) creates, updates and deletes rows under
       // FOR UPDATE and the child-graph lock, and a manual trigger holds FOR KEY SHARE; the leader
       // (PgFireStore) claims due jobs FOR UPDATE SKIP LOCKED and advances next_fire_at, and reads
       // jobs for pending fires and finished runs. Read only by:
       // - registry (PgAppStore::Delete): counts an app's jobs; an app with jobs is not deleted.
       // - dispatcher (recording results): child_job_ids, to mark a success of a job without
       //   child jobs followed up at once.
       R"sql(
CREATE TABLE jobs (
  id BIGSERIAL PRIMARY KEY,
  app TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  owner TEXT NOT NULL DEFAULT '',
  alarm_contacts TEXT[] NOT NULL DEFAULT '{}',
  schedule_kind TEXT NOT NULL CHECK (schedule_kind IN ('CRON', 'FIX_RATE', 'NONE')),
  cron_expression TEXT NOT NULL DEFAULT '',
  time_zone TEXT NOT NULL DEFAULT 'UTC',
  fix_rate_seconds BIGINT NOT NULL DEFAULT 0,
  fix_rate_start TIMESTAMPTZ,
  misfire_strategy INT NOT NULL DEFAULT 1,
  routing_strategy INT NOT NULL DEFAULT 1,
  block_strategy INT NOT NULL DEFAULT 1,
  handler TEXT NOT NULL DEFAULT '',
  param TEXT NOT NULL DEFAULT '',
  timeout_ms BIGINT NOT NULL DEFAULT 0,
  fail_retry_count INT NOT NULL DEFAULT 0,
  child_job_ids BIGINT[] NOT NULL DEFAULT '{}',
  glue_type INT NOT NULL DEFAULT 1,
  script_source TEXT NOT NULL DEFAULT '',
  script_version INT NOT NULL DEFAULT 0,
  enabled BOOLEAN NOT NULL DEFAULT true,
  next_fire_at TIMESTAMPTZ,
  create_time TIMESTAMPTZ NOT NULL DEFAULT now(),
  update_time TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX jobs_due ON jobs (next_fire_at) WHERE enabled AND next_fire_at IS NOT NULL;
CREATE INDEX jobs_app ON jobs (app);
)sql"
       // scripts. Owner: scheduler admin API (PgJobStore: one row per script version, deleted
       // with the job). No other service reads or writes it.
       R"sql(
-- Every version of a job's script, so a run can name the source it executed.
CREATE TABLE scripts (
  job_id BIGINT NOT NULL,
  version INT NOT NULL,
  glue_type INT NOT NULL,
  source TEXT NOT NULL,
  create_time TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, version)
);
)sql"
       // fires. Owner: scheduler. The leader (PgFireStore) inserts schedule fires (CRON, FIX_RATE,
       // MISFIRE; SKIPPED misfires), retry and child fires; fails PENDING fires whose job is gone;
       // deletes old settled fires (retention). The admin API (PgJobStore) inserts MANUAL fires
       // and deletes a job's PENDING fires when it changes or goes. Others:
       // - dispatcher (DispatchFires): locks the rows FOR UPDATE in id order and moves PENDING to
       //   DISPATCHED or FAILED (status, reason appended, dispatch_time) with the runs it inserts:
       //   the exactly-once hand-over (see the top of this file).
       // - scheduler leader reads fires joined to runs (param, trigger type) for follow-ups.
       R"sql(
-- One row per due time of a job (or manual/retry/child trigger).
CREATE TABLE fires (
  id BIGSERIAL PRIMARY KEY,
  job_id BIGINT NOT NULL,
  scheduled_at TIMESTAMPTZ NOT NULL,
  trigger_type INT NOT NULL,
  status INT NOT NULL DEFAULT 1,
  reason TEXT NOT NULL DEFAULT '',
  param TEXT,
  shard_index INT NOT NULL DEFAULT 0,
  shard_total INT NOT NULL DEFAULT 0,
  executor_address TEXT NOT NULL DEFAULT '',
  attempt INT NOT NULL DEFAULT 0,
  parent_run_id BIGINT,
  leader_epoch BIGINT NOT NULL DEFAULT 0,
  create_time TIMESTAMPTZ NOT NULL DEFAULT now(),
  dispatch_time TIMESTAMPTZ
);
-- Exactly once per scheduled second: schedule-driven fires are unique per job and time.
CREATE UNIQUE INDEX fires_schedule_once ON fires (job_id, scheduled_at)
  WHERE trigger_type IN (1, 2, 4);
CREATE INDEX fires_pending ON fires (scheduled_at) WHERE status = 1;
CREATE INDEX fires_create_time ON fires (create_time);
-- At most one retry fire per failed run, at most one child fire per (parent run, child job).
CREATE UNIQUE INDEX fires_followup_once ON fires (parent_run_id, job_id)
  WHERE parent_run_id IS NOT NULL;
)sql"
       // runs. Owner: dispatcher (DispatchFires inserts them, at most one per fire and shard;
       // trigger answers, reroutes and results update them, rows locked in id order). Others:
       // - scheduler leader (PgFireStore monitors): FOR UPDATE OF r SKIP LOCKED on finished runs
       //   to set followup_done and alarm_sent; RUNNING runs to LOST, stale PENDING runs to
       //   FAILED (each conditional on the status); retention deletes old followed-up runs.
       // - scheduler admin API (PgJobStore): KillRun sets an open run KILLED (conditional on
       //   the status); lists, gets and counts runs (runs_job_time, runs_open,
       //   runs_trigger_time).
       R"sql(
CREATE TABLE runs (
  id BIGSERIAL PRIMARY KEY,
  fire_id BIGINT NOT NULL,
  job_id BIGINT NOT NULL,
  app TEXT NOT NULL,
  handler TEXT NOT NULL DEFAULT '',
  trigger_type INT NOT NULL,
  attempt INT NOT NULL DEFAULT 0,
  shard_index INT NOT NULL DEFAULT 0,
  shard_total INT NOT NULL DEFAULT 1,
  executor_address TEXT NOT NULL DEFAULT '',
  routing_strategy INT NOT NULL DEFAULT 1,
  status INT NOT NULL DEFAULT 1,
  trigger_message TEXT NOT NULL DEFAULT '',
  result_code INT NOT NULL DEFAULT 0,
  result_message TEXT NOT NULL DEFAULT '',
  param TEXT NOT NULL DEFAULT '',
  scheduled_time TIMESTAMPTZ NOT NULL,
  trigger_time TIMESTAMPTZ NOT NULL DEFAULT now(),
  start_time TIMESTAMPTZ,
  end_time TIMESTAMPTZ,
  -- Set once the leader has started this run's retry or child jobs (or decided none are due).
  followup_done BOOLEAN NOT NULL DEFAULT false,
  alarm_sent BOOLEAN NOT NULL DEFAULT false
);
-- A fire creates each shard's run once, however often it is dispatched.
CREATE UNIQUE INDEX runs_fire_shard ON runs (fire_id, shard_index);
CREATE INDEX runs_job_time ON runs (job_id, trigger_time DESC);
CREATE INDEX runs_open ON runs (status) WHERE status IN (1, 2);
CREATE INDEX runs_followup ON runs (id) WHERE NOT followup_done AND status >= 3;
)sql"
       // leadership. Owner: scheduler (LeaderElector: each new leader records itself and bumps
       // the epoch, which the fires it writes carry; every replica reads who holds the lock).
       // No other service reads or writes it.
       R"sql(
-- The schedule lock's fencing epoch and holder, written by each new leader.
CREATE TABLE leadership (
  id INT PRIMARY KEY CHECK (id = 1),
  holder_id TEXT NOT NULL,
  since TIMESTAMPTZ NOT NULL,
  epoch BIGINT NOT NULL
);
)sql"},
      {2,
       // tokens. Owner: scheduler (TokenAdminService through PgTokenStore: create, revoke, list).
       // Others: every service (scheduler, registry, dispatcher) authenticates API tokens through
       // PgTokenStore::FindActive, which sets last_used_time of the token it finds: the only write
       // by another service, to that column only.
       R"sql(
-- API tokens (TokenAdminService). Only the SHA-256 of a secret is stored, never the secret.
CREATE TABLE tokens (
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('ADMIN', 'OPERATOR', 'VIEWER', 'EXECUTOR')),
  apps TEXT[] NOT NULL DEFAULT '{}',
  secret_hash TEXT NOT NULL UNIQUE CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
  create_time TIMESTAMPTZ NOT NULL DEFAULT now(),
  expire_time TIMESTAMPTZ,
  revoke_time TIMESTAMPTZ,
  last_used_time TIMESTAMPTZ
);
CREATE UNIQUE INDEX tokens_name_active ON tokens (name) WHERE revoke_time IS NULL;
)sql"},
      {3,
       // runs (owner: dispatcher): an index for the scheduler's retention.
       R"sql(
-- Retention finds old runs by trigger_time, which had no index: every pass scanned the whole
-- table. Runs are appended in time order, so a BRIN index (a few pages, touched only when a
-- page range's bounds widen; nearly free per insert) narrows it to the old page ranges. Once
-- retention has freed pages that new runs reuse, their ranges widen and the scan grows back
-- towards the whole table, never worse than before. (fires.create_time keeps its B-tree.)
CREATE INDEX runs_trigger_time ON runs USING brin (trigger_time);
)sql"},
      {4,
       // jobs (owner: scheduler): written by the admin API with child_job_ids, read by the
       // leader when it inserts child fires.
       R"sql(
-- Child jobs in another app fire only within the scope of whoever last set child_job_ids: the
-- apps that writer may operate (NULL: every app, an ADMIN or an OPERATOR of "*"). Jobs written
-- before this column existed get '{}': their children fire only in the parent's own app until
-- an ADMIN saves them again.
ALTER TABLE jobs ADD COLUMN child_scope TEXT[] DEFAULT '{}';
)sql"},
      {5,
       // executors (owner: registry): written and read by the registry only.
       R"sql(
-- The executor process that holds each row (ExecutorRegistration.instance_id). While a row is
-- online (and its lease has not run out) only a registration with the same instance_id may
-- replace it, through any replica. NULL for rows written before: matches no registration.
ALTER TABLE executors ADD COLUMN instance_id TEXT;
)sql"},
      {6,
       // alarm_outbox. Owner: scheduler leader. The monitor pass (PgFireStore) inserts alarms
       // in the transaction that decides them (ON CONFLICT (idempotency_key) DO NOTHING); the
       // alarm sender (PgAlarmOutbox) claims due rows FOR UPDATE SKIP LOCKED, marks them sent or
       // schedules their next attempt. No other service reads or writes it.
       // jobs.schedule_error: set by the monitor pass when it stops a job whose stored schedule
       // cannot be computed; the admin API reads it into Job.schedule_error.
       R"sql(
CREATE TABLE alarm_outbox (
  id BIGSERIAL PRIMARY KEY,
  kind TEXT NOT NULL,
  job_id BIGINT NOT NULL,
  run_id BIGINT,
  idempotency_key TEXT NOT NULL UNIQUE,
  payload TEXT NOT NULL,
  created TIMESTAMPTZ NOT NULL DEFAULT now(),
  attempts INT NOT NULL DEFAULT 0,
  next_attempt TIMESTAMPTZ NOT NULL DEFAULT now(),
  sent_at TIMESTAMPTZ,
  last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX alarm_outbox_due ON alarm_outbox (next_attempt) WHERE sent_at IS NULL;
ALTER TABLE jobs ADD COLUMN schedule_error TEXT;
)sql"},
      {7,
       // runs (owner: dispatcher): written by the dispatcher when it creates a run and when it
       // ingests its result.
       R"sql(
-- SHA-256 of the run's RunRequest.result_key: a result is recorded only with the key the
-- run's executor was given. NULL for runs written before: their results need no key.
ALTER TABLE runs ADD COLUMN result_key_hash BYTEA;
-- A result that arrived after the run's status was decided (e.g. LOST after its executor was
-- declared offline): kept in words, the decided status unchanged.
ALTER TABLE runs ADD COLUMN late_result TEXT;
)sql"},
      {8,
       // executors (owner: registry): PgExecutorStore sets offline_since when it takes a row
       // offline (stream closed, goodbye, missed beats, lease expired) and clears it when the row
       // comes online; it sets instance_since when a registration brings another instance_id
       // than the row held (a new executor process under the address). Read only by the
       // scheduler leader (PgFireStore monitors): RUNNING runs on a row offline longer than the
       // reconnect grace, or started before the row's current process registered, are LOST.
       R"sql(
-- When the registry took the row offline (NULL while online, and for rows taken offline
-- before this column existed).
ALTER TABLE executors ADD COLUMN offline_since TIMESTAMPTZ;
-- When the row's current instance_id (executor process) first registered; a reconnect of the
-- same process keeps it. NULL for rows registered before this column existed.
ALTER TABLE executors ADD COLUMN instance_since TIMESTAMPTZ;
)sql"},
      {9,
       // jobs (owner: scheduler): FIX_DELAY schedules. The admin API (PgJobStore) writes
       // fix_delay_ms (and fix_rate_start as the first fire's time) and clears delay_fire_id on
       // every write; the leader (PgFireStore) sets delay_fire_id in the claim transaction that
       // records a FIX_DELAY job's fire (next_fire_at NULL: the job waits), moves it to the
       // retry fire in the monitor pass that writes one, and in its delay-chain pass sets
       // next_fire_at = the last run's end + fix_delay_ms and clears it once that fire and its
       // runs have ended and been followed up. No other service reads these columns.
       R"sql(
-- FIX_DELAY: the next fire fix_delay_ms after the previous run ended.
ALTER TABLE jobs DROP CONSTRAINT jobs_schedule_kind_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_schedule_kind_check
  CHECK (schedule_kind IN ('CRON', 'FIX_RATE', 'FIX_DELAY', 'NONE'));
ALTER TABLE jobs ADD COLUMN fix_delay_ms BIGINT NOT NULL DEFAULT 0;
-- The fire a FIX_DELAY job waits for (its chain's last fire or retry); NULL: not waiting.
ALTER TABLE jobs ADD COLUMN delay_fire_id BIGINT;
CREATE INDEX jobs_delay_waiting ON jobs (id) WHERE delay_fire_id IS NOT NULL;
)sql"},
      {10,
       // audit_events. Owner: scheduler admin API (PgJobStore writes an event inside the
       // transaction of the change it records and lists them; every replica). The leader
       // (PgFireStore retention) deletes old ones. No other service reads or writes it.
       // jobs (owner: scheduler): labels and the job's own run retention, written by the admin
       // API (PgJobStore); labels read by its ListJobs filter, the retention by the leader's
       // retention pass (PgFireStore).
       R"sql(
-- Who changed what through the admin API: one row per mutating call that succeeded.
CREATE TABLE audit_events (
  id BIGSERIAL PRIMARY KEY,
  time TIMESTAMPTZ NOT NULL DEFAULT now(),
  actor_token_id BIGINT NOT NULL DEFAULT 0,
  actor_name TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  apps TEXT[] NOT NULL DEFAULT '{}',
  -- Field-level changes, index by index (secrets never stored).
  change_fields TEXT[] NOT NULL DEFAULT '{}',
  change_before TEXT[] NOT NULL DEFAULT '{}',
  change_after TEXT[] NOT NULL DEFAULT '{}',
  peer TEXT NOT NULL DEFAULT '',
  request_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_events_time ON audit_events (time);
CREATE INDEX audit_events_target ON audit_events (target, id);
CREATE INDEX audit_events_actor ON audit_events (actor_name, id);
CREATE INDEX audit_events_apps ON audit_events USING gin (apps);
-- key=value labels, filtered by ListJobs (containment uses the GIN index).
ALTER TABLE jobs ADD COLUMN labels JSONB NOT NULL DEFAULT '{}';
CREATE INDEX jobs_labels ON jobs USING gin (labels jsonb_path_ops);
-- A job's own run retention (0: the global one); the retention pass reads the few jobs set.
ALTER TABLE jobs ADD COLUMN run_max_age_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN run_keep_last INT NOT NULL DEFAULT 0;
CREATE INDEX jobs_own_retention ON jobs (id) WHERE run_max_age_ms > 0 OR run_keep_last > 0;
)sql"},
      {11,
       // executor_drains. Owner: registry (AppAdminService/SetExecutorDraining through
       // PgAppStore: set and undone by operators; deleted with the app). Read by the registry
       // (PgExecutorStore) into each executor it lists and announces (Executor.draining), so
       // dispatchers learn of it on their WatchExecutors stream. No other service reads it.
       R"sql(
-- Executor addresses operators drained: no new runs routed there until undone.
CREATE TABLE executor_drains (
  app TEXT NOT NULL REFERENCES apps (name) ON DELETE CASCADE,
  address TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  set_by TEXT NOT NULL DEFAULT '',
  set_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (app, address)
);
)sql"},
  };
  return *migrations;
}

}  // namespace

absl::Status ApplyMigrations(pqxx::connection& conn) {
  try {
    pqxx::work tx(conn);
    // Serializes replicas starting at once; released at commit.
    tx.exec("SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLockKey) + ")");
    // schema_version. Owner: this function, which every service runs at start.
    tx.exec(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        "version INT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    pqxx::result r = tx.exec("SELECT COALESCE(max(version), 0) FROM schema_version");
    const int current = r[0][0].as<int>();
    for (const Migration& m : Migrations()) {
      if (m.version <= current) continue;
      tx.exec(m.sql);
      tx.exec("INSERT INTO schema_version (version) VALUES (" + std::to_string(m.version) + ")");
    }
    tx.commit();
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return PgErrorToStatus(e, "apply migrations");
  }
}

int LatestSchemaVersion() { return Migrations().back().version; }

}  // namespace jobwheel
