#include "common/pg/migrations.h"

#include <string>
#include <vector>

#include "common/pg/pg_errors.h"
#include "pqxx/pqxx"

namespace jobwheel {
namespace {

// Key of the transaction-level advisory lock that serializes migrations across replicas.
constexpr int64_t kMigrationLockKey = 0x6a6f62776865656c;  // "jobwheel"

struct Migration {
  int version;
  const char* sql;
};

// Append only: a released migration never changes.
const std::vector<Migration>& Migrations() {
  static const auto* migrations = new std::vector<Migration>{
      {1, R"sql(
CREATE TABLE apps (
  name TEXT PRIMARY KEY,
  title TEXT NOT NULL DEFAULT '',
  address_type TEXT NOT NULL DEFAULT 'AUTO' CHECK (address_type IN ('AUTO', 'MANUAL')),
  manual_addresses TEXT[] NOT NULL DEFAULT '{}',
  create_time TIMESTAMPTZ NOT NULL DEFAULT now(),
  update_time TIMESTAMPTZ NOT NULL DEFAULT now()
);

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

-- Every version of a job's script, so a run can name the source it executed.
CREATE TABLE scripts (
  job_id BIGINT NOT NULL,
  version INT NOT NULL,
  glue_type INT NOT NULL,
  source TEXT NOT NULL,
  create_time TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, version)
);

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

-- The schedule lock's fencing epoch and holder, written by each new leader.
CREATE TABLE leadership (
  id INT PRIMARY KEY CHECK (id = 1),
  holder_id TEXT NOT NULL,
  since TIMESTAMPTZ NOT NULL,
  epoch BIGINT NOT NULL
);
)sql"},
      {2, R"sql(
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
      {3, R"sql(
-- Retention finds old runs by trigger_time, which had no index: every pass scanned the whole
-- table. Runs are appended in time order, so a BRIN index (a few pages, touched only when a
-- page range's bounds widen; nearly free per insert) narrows it to the old page ranges. Once
-- retention has freed pages that new runs reuse, their ranges widen and the scan grows back
-- towards the whole table, never worse than before. (fires.create_time keeps its B-tree.)
CREATE INDEX runs_trigger_time ON runs USING brin (trigger_time);
)sql"},
      {4, R"sql(
-- Child jobs in another app fire only within the scope of whoever last set child_job_ids: the
-- apps that writer may operate (NULL: every app, an ADMIN or an OPERATOR of "*"). Jobs written
-- before this column existed get '{}': their children fire only in the parent's own app until
-- an ADMIN saves them again.
ALTER TABLE jobs ADD COLUMN child_scope TEXT[] DEFAULT '{}';
)sql"},
      {5, R"sql(
-- The executor process that holds each row (ExecutorRegistration.instance_id). While a row is
-- online (and its lease has not run out) only a registration with the same instance_id may
-- replace it, through any replica. NULL for rows written before: matches no registration.
ALTER TABLE executors ADD COLUMN instance_id TEXT;
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
