#include "services/registry/pg_executor_store.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/model/instance_tag.h"
#include "common/pg/pg_arrays.h"
#include "common/pg/pg_errors.h"
#include "common/pg/sql_enums.h"
#include "common/time/proto_time.h"

namespace jobwheel::registry {
namespace {

// Expression announcing an executor row (columns app, address in scope).
#define JW_NOTIFY_EXECUTOR                                                   \
  "pg_notify('jobwheel_executors', 'e|' || "                                 \
  "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT || '|' || app " \
  "|| '|' || "                                                               \
  "address)"

// Admins create apps; a registration never does. The app row is share-locked so it cannot be
// deleted while an executor of it is being registered.
constexpr char kAppExistsSql[] = "SELECT 1 FROM apps WHERE name = $1 FOR SHARE";

// Registrations of one address are serialized (whatever their app), so two apps can never both
// hold it online: the check below and the insert run under this transaction-level lock.
constexpr char kLockAddressSql[] = "SELECT pg_advisory_xact_lock(hashtext('jwaddr|' || $1))";

// The app that holds the address online (lease running) other than $2, if any.
constexpr char kOnlineForOtherAppSql[] =
    "SELECT app FROM executors WHERE address = $1 AND app <> $2 AND online "
    "AND lease_until >= now() LIMIT 1";

// Inserts the row, or replaces it only when it is offline, its lease has run out, or it belongs
// to the same executor process (instance_id): ON CONFLICT DO UPDATE locks the existing row and
// evaluates the WHERE on its latest version, so of two registrations racing through different
// replicas only one can win. No row returned: refused, nothing written.
constexpr char kRegisterSql[] =
    "INSERT INTO executors (app, address, handlers, sdk_version, capacity, labels, "
    "allow_scripts, replica_id, session_id, online, lease_until, register_time, "
    "last_beat_time, running, queued, instance_id, instance_since) "
    "VALUES ($1, $2, $3::text[], $4, $5, jsonb_object($6::text[], $7::text[]), $8, $9, $10, "
    "true, now() + $11::bigint * interval '1 microsecond', now(), now(), 0, 0, NULLIF($12, ''), "
    "now()) "
    "ON CONFLICT (app, address) DO UPDATE SET handlers = EXCLUDED.handlers, "
    "sdk_version = EXCLUDED.sdk_version, capacity = EXCLUDED.capacity, "
    "labels = EXCLUDED.labels, allow_scripts = EXCLUDED.allow_scripts, "
    "replica_id = EXCLUDED.replica_id, session_id = EXCLUDED.session_id, online = true, "
    "lease_until = EXCLUDED.lease_until, register_time = now(), last_beat_time = now(), "
    "running = 0, queued = 0, instance_id = EXCLUDED.instance_id, offline_since = NULL, "
    "instance_since = CASE WHEN executors.instance_id IS NOT DISTINCT FROM EXCLUDED.instance_id "
    "THEN executors.instance_since ELSE now() END "
    "WHERE NOT executors.online OR executors.lease_until < now() "
    "OR executors.instance_id = EXCLUDED.instance_id "
    "RETURNING (EXTRACT(EPOCH FROM register_time) * 1000000)::BIGINT, " JW_NOTIFY_EXECUTOR;

constexpr char kMarkOfflineSql[] =
    "WITH off AS (UPDATE executors SET online = false, offline_since = now() "
    "WHERE app = $1 AND address = $2 AND session_id = $3 AND online RETURNING "
    "app, address) "
    "SELECT " JW_NOTIFY_EXECUTOR " FROM off";

constexpr char kRenewSql[] =
    "UPDATE executors e SET lease_until = now() + $8::bigint * interval '1 "
    "microsecond', "
    "last_beat_time = u.beat, running = u.running, queued = u.queued "
    "FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[], "
    "$6::int[], $7::int[]) "
    "AS u(app, address, session_id, beat, running, queued) "
    "WHERE e.app = u.app AND e.address = u.address AND e.session_id = "
    "u.session_id "
    "AND e.replica_id = $1 AND e.online "
    "RETURNING e.session_id";

constexpr char kOwnersSql[] =
    "SELECT e.app, e.address, e.session_id, e.online FROM executors e "
    "JOIN unnest($1::text[], $2::text[]) AS k(app, address) "
    "ON e.app = k.app AND e.address = k.address";

constexpr char kExpireSql[] =
    "WITH expired AS (UPDATE executors SET online = false, offline_since = now() "
    "WHERE online AND lease_until < now() RETURNING app, address) "
    "SELECT " JW_NOTIFY_EXECUTOR " FROM expired";

#define JW_EXECUTOR_COLUMNS                                               \
  "e.app, e.address, e.handlers, e.sdk_version, e.capacity, "             \
  "COALESCE((SELECT array_agg(key ORDER BY key) FROM "                    \
  "jsonb_each_text(e.labels)), '{}'), "                                   \
  "COALESCE((SELECT array_agg(value ORDER BY key) FROM "                  \
  "jsonb_each_text(e.labels)), '{}'), "                                   \
  "e.allow_scripts, e.replica_id, "                                       \
  "(EXTRACT(EPOCH FROM e.register_time) * 1000000)::BIGINT, "             \
  "(EXTRACT(EPOCH FROM e.last_beat_time) * 1000000)::BIGINT, e.running, " \
  "e.queued, COALESCE(e.instance_id, ''), d.address IS NOT NULL, COALESCE(d.reason, '') "

// With the operator's drain of each row, if any.
#define JW_EXECUTOR_DRAINS "LEFT JOIN executor_drains d ON d.app = e.app AND d.address = e.address "

constexpr char kListOnlineSql[] =
    "SELECT " JW_EXECUTOR_COLUMNS "FROM executors e " JW_EXECUTOR_DRAINS
    "WHERE e.online ORDER BY e.app, e.address";

constexpr char kGetOnlineSql[] =
    "SELECT " JW_EXECUTOR_COLUMNS
    "FROM executors e JOIN unnest($1::text[], $2::text[]) AS k(app, address) "
    "ON e.app = k.app AND e.address = k.address " JW_EXECUTOR_DRAINS "WHERE e.online";

constexpr char kListAppConfigsSql[] =
    "SELECT name, address_type, manual_addresses FROM apps ORDER BY name";
constexpr char kGetAppConfigsSql[] =
    "SELECT name, address_type, manual_addresses FROM apps WHERE name = "
    "ANY($1::text[])";

v1::Executor ExecutorFromRow(const pqxx::row& row) {
  v1::Executor e;
  e.set_app(row[0].as<std::string>());
  e.set_address(row[1].as<std::string>());
  for (std::string& h : FromPgArray(row[2])) e.add_handlers(std::move(h));
  e.set_sdk_version(row[3].as<std::string>());
  e.set_capacity(row[4].as<int>());
  std::vector<std::string> keys = FromPgArray(row[5]);
  std::vector<std::string> values = FromPgArray(row[6]);
  for (size_t i = 0; i < keys.size() && i < values.size(); ++i) {
    (*e.mutable_labels())[keys[i]] = values[i];
  }
  e.set_allow_scripts(row[7].as<bool>());
  e.set_registry_replica(row[8].as<std::string>());
  *e.mutable_register_time() = ToProto(FromMicros(row[9].as<int64_t>()));
  *e.mutable_last_beat_time() = ToProto(FromMicros(row[10].as<int64_t>()));
  e.set_running(row[11].as<int>());
  e.set_queued(row[12].as<int>());
  e.set_instance(InstanceTag(row[13].as<std::string>()));
  e.set_draining(row[14].as<bool>());
  e.set_drain_reason(row[15].as<std::string>());
  return e;
}

AppConfig AppConfigFromRow(const pqxx::row& row) {
  AppConfig app;
  app.name = row[0].as<std::string>();
  app.address_type = sql::AddressTypeFromSqlName(row[1].as<std::string>());
  app.manual_addresses = FromPgArray(row[2]);
  return app;
}

void SplitKeys(const std::vector<ExecutorKey>& keys, std::string* apps, std::string* addresses) {
  std::vector<std::string> a, b;
  a.reserve(keys.size());
  b.reserve(keys.size());
  for (const ExecutorKey& k : keys) {
    a.push_back(k.app);
    b.push_back(k.address);
  }
  *apps = ToPgArray(a);
  *addresses = ToPgArray(b);
}

}  // namespace

absl::StatusOr<v1::Executor> PgExecutorStore::Register(const v1::Executor& executor,
                                                       const std::string& replica_id,
                                                       const std::string& session_id,
                                                       absl::Duration lease,
                                                       const std::string& instance_id) {
  std::vector<std::string> handlers(executor.handlers().begin(), executor.handlers().end());
  std::map<std::string, std::string> labels(executor.labels().begin(), executor.labels().end());
  std::vector<std::string> label_keys, label_values;
  for (const auto& [k, v] : labels) {
    label_keys.push_back(k);
    label_values.push_back(v);
  }
  int64_t register_micros = 0;
  bool refused = false;
  absl::Status failure;  // Refused before the upsert: nothing written.
  absl::Status s = pool_.Run("register", [&](pqxx::connection& conn) {
    failure = absl::OkStatus();  // The pool may run this again after a lost connection.
    pqxx::work tx(conn);
    if (tx.exec_params(kAppExistsSql, executor.app()).empty()) {
      failure = absl::FailedPreconditionError(
          absl::StrCat("register.app: app ", executor.app(),
                       " does not exist; an admin creates it (AppAdminService/CreateApp)"));
      return;
    }
    tx.exec_params(kLockAddressSql, executor.address());
    if (pqxx::result other =
            tx.exec_params(kOnlineForOtherAppSql, executor.address(), executor.app());
        !other.empty()) {
      failure = absl::AlreadyExistsError(
          absl::StrCat("register.address: ", executor.address(), " is online for another app (",
                       other[0][0].as<std::string>(), "); an address serves one app at a time"));
      return;
    }
    pqxx::result r =
        tx.exec_params(kRegisterSql, executor.app(), executor.address(), ToPgArray(handlers),
                       executor.sdk_version(), executor.capacity(), ToPgArray(label_keys),
                       ToPgArray(label_values), executor.allow_scripts(), replica_id, session_id,
                       absl::ToInt64Microseconds(lease), instance_id);
    refused = r.empty();
    if (refused) return;  // Rolled back: nothing written.
    register_micros = r[0][0].as<int64_t>();
    tx.commit();
  });
  if (!s.ok()) return s;
  if (!failure.ok()) return failure;
  if (refused) {
    return absl::AlreadyExistsError(absl::StrCat(
        "executor ", executor.app(), "/", executor.address(), " is online with another instance"));
  }
  v1::Executor stored = executor;
  stored.set_registry_replica(replica_id);
  *stored.mutable_register_time() = ToProto(FromMicros(register_micros));
  *stored.mutable_last_beat_time() = stored.register_time();
  stored.set_running(0);
  stored.set_queued(0);
  stored.set_instance(InstanceTag(instance_id));
  return stored;
}

absl::StatusOr<bool> PgExecutorStore::MarkOffline(const SessionRef& session) {
  bool changed = false;
  absl::Status s = pool_.Run("mark_offline", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    pqxx::result r =
        tx.exec_params(kMarkOfflineSql, session.key.app, session.key.address, session.session_id);
    tx.commit();
    changed = !r.empty();
  });
  if (!s.ok()) return s;
  return changed;
}

absl::StatusOr<std::vector<LostSession>> PgExecutorStore::RenewLeases(
    const std::string& replica_id, const std::vector<LeaseRenewal>& renewals,
    absl::Duration lease) {
  std::vector<LostSession> lost;
  if (renewals.empty()) return lost;
  std::vector<std::string> apps, addresses, sessions, beats, running, queued;
  std::vector<ExecutorKey> keys;
  for (const LeaseRenewal& r : renewals) {
    apps.push_back(r.session.key.app);
    addresses.push_back(r.session.key.address);
    sessions.push_back(r.session.session_id);
    beats.push_back(ToPgTimestamp(r.last_beat_time));
    running.push_back(absl::StrCat(r.running));
    queued.push_back(absl::StrCat(r.queued));
    keys.push_back(r.session.key);
  }
  std::set<std::string> renewed;
  absl::Status s = pool_.Run("renew_leases", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    pqxx::result r = tx.exec_params(kRenewSql, replica_id, ToPgArray(apps), ToPgArray(addresses),
                                    ToPgArray(sessions), ToPgArray(beats), ToPgArray(running),
                                    ToPgArray(queued), absl::ToInt64Microseconds(lease));
    tx.commit();
    for (const auto& row : r) renewed.insert(row[0].as<std::string>());
  });
  if (!s.ok()) return s;
  if (renewed.size() == renewals.size()) return lost;

  // Rare: find out why the others were not renewed.
  std::vector<ExecutorKey> lost_keys;
  for (const LeaseRenewal& r : renewals) {
    if (renewed.count(r.session.session_id) == 0) lost_keys.push_back(r.session.key);
  }
  std::map<ExecutorKey, std::pair<std::string, bool>> owners;
  std::string key_apps, key_addresses;
  SplitKeys(lost_keys, &key_apps, &key_addresses);
  s = pool_.Run("lease_owners", [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec_params(kOwnersSql, key_apps, key_addresses);
    for (const auto& row : r) {
      owners[{row[0].as<std::string>(), row[1].as<std::string>()}] = {row[2].as<std::string>(),
                                                                      row[3].as<bool>()};
    }
  });
  if (!s.ok()) return s;
  for (const LeaseRenewal& r : renewals) {
    if (renewed.count(r.session.session_id) > 0) continue;
    auto it = owners.find(r.session.key);
    const bool superseded =
        it != owners.end() && it->second.second && it->second.first != r.session.session_id;
    lost.push_back(
        {r.session.session_id, superseded ? LostReason::kSuperseded : LostReason::kMissing});
  }
  return lost;
}

absl::StatusOr<int> PgExecutorStore::ExpireLeases() {
  int expired = 0;
  absl::Status s = pool_.Run("expire_leases", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    pqxx::result r = tx.exec(kExpireSql);
    tx.commit();
    expired = static_cast<int>(r.size());
  });
  if (!s.ok()) return s;
  return expired;
}

absl::StatusOr<std::vector<v1::Executor>> PgExecutorStore::ListOnline() {
  std::vector<v1::Executor> out;
  absl::Status s = pool_.Run("list_online", [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec(kListOnlineSql);
    out.clear();
    for (const auto& row : r) out.push_back(ExecutorFromRow(row));
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<v1::Executor>> PgExecutorStore::GetOnline(
    const std::vector<ExecutorKey>& keys) {
  std::vector<v1::Executor> out;
  if (keys.empty()) return out;
  std::string apps, addresses;
  SplitKeys(keys, &apps, &addresses);
  absl::Status s = pool_.Run("get_online", [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec_params(kGetOnlineSql, apps, addresses);
    out.clear();
    for (const auto& row : r) out.push_back(ExecutorFromRow(row));
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<AppConfig>> PgExecutorStore::ListAppConfigs() {
  std::vector<AppConfig> out;
  absl::Status s = pool_.Run("list_app_configs", [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec(kListAppConfigsSql);
    out.clear();
    for (const auto& row : r) out.push_back(AppConfigFromRow(row));
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<AppConfig>> PgExecutorStore::GetAppConfigs(
    const std::vector<std::string>& names) {
  std::vector<AppConfig> out;
  if (names.empty()) return out;
  absl::Status s = pool_.Run("get_app_configs", [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec_params(kGetAppConfigsSql, ToPgArray(names));
    out.clear();
    for (const auto& row : r) out.push_back(AppConfigFromRow(row));
  });
  if (!s.ok()) return s;
  return out;
}

bool ParseChangePayload(const std::string& payload, Change* change) {
  std::vector<std::string> parts = absl::StrSplit(payload, absl::MaxSplits('|', 3));
  if (parts.size() < 3) return false;
  int64_t micros = 0;
  if (!absl::SimpleAtoi(parts[1], &micros)) return false;
  change->committed_at = FromMicros(micros);
  change->app = parts[2];
  if (parts[0] == "e" && parts.size() == 4) {
    change->kind = Change::Kind::kExecutor;
    change->address = parts[3];
    return true;
  }
  if (parts[0] == "a" && parts.size() == 3) {
    change->kind = Change::Kind::kApp;
    change->address.clear();
    return true;
  }
  return false;
}

PgChangeFeed::PgChangeFeed(std::string dsn, const Clock& clock)
    : listener_(std::move(dsn), kChangeChannel, clock) {}

absl::Status PgChangeFeed::Connect() { return listener_.Connect(); }

absl::StatusOr<std::vector<Change>> PgChangeFeed::Wait(absl::Duration timeout) {
  absl::StatusOr<std::vector<std::string>> payloads = listener_.Wait(timeout);
  if (!payloads.ok()) return payloads.status();
  std::vector<Change> changes;
  for (const std::string& p : *payloads) {
    Change c;
    if (ParseChangePayload(p, &c)) changes.push_back(std::move(c));
  }
  return changes;
}

}  // namespace jobwheel::registry
