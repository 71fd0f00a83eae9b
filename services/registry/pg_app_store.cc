#include "services/registry/pg_app_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/audit/audit_event.h"
#include "common/pg/pg_arrays.h"
#include "common/pg/pg_audit_log.h"
#include "common/pg/sql_enums.h"
#include "common/time/proto_time.h"

namespace jobwheel::registry {
namespace {

#define JW_APP_COLUMNS                                    \
  "name, title, address_type, manual_addresses, "         \
  "(EXTRACT(EPOCH FROM create_time) * 1000000)::BIGINT, " \
  "(EXTRACT(EPOCH FROM update_time) * 1000000)::BIGINT "

constexpr char kNotifyAppSql[] =
    "SELECT pg_notify('jobwheel_executors', 'a|' || "
    "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT || '|' || $1)";

constexpr char kCreateSql[] =
    "INSERT INTO apps (name, title, address_type, manual_addresses) "
    "VALUES ($1, $2, $3, $4::text[]) RETURNING " JW_APP_COLUMNS;

constexpr char kUpdateSql[] =
    "UPDATE apps SET title = $2, address_type = $3, manual_addresses = "
    "$4::text[], "
    "update_time = now() WHERE name = $1 RETURNING " JW_APP_COLUMNS;

constexpr char kGetSql[] = "SELECT " JW_APP_COLUMNS "FROM apps WHERE name = $1";
constexpr char kLockSql[] = "SELECT " JW_APP_COLUMNS "FROM apps WHERE name = $1 FOR UPDATE";
constexpr char kListSql[] = "SELECT " JW_APP_COLUMNS "FROM apps ORDER BY name";
constexpr char kCountJobsSql[] = "SELECT count(*) FROM jobs WHERE app = $1";
constexpr char kDeleteSql[] = "DELETE FROM apps WHERE name = $1";
constexpr char kDeleteOfflineExecutorsSql[] = "DELETE FROM executors WHERE app = $1 AND NOT online";

constexpr char kDrainSql[] =
    "INSERT INTO executor_drains (app, address, reason, set_by) VALUES ($1, $2, $3, $4) "
    "ON CONFLICT (app, address) DO UPDATE SET reason = EXCLUDED.reason, "
    "set_by = EXCLUDED.set_by, set_at = now()";
constexpr char kUndrainSql[] = "DELETE FROM executor_drains WHERE app = $1 AND address = $2";
constexpr char kDrainOfSql[] =
    "SELECT reason FROM executor_drains WHERE app = $1 AND address = $2 FOR UPDATE";
// Announced as an executor change: replicas reload its row (with the drain) and watchers get it.
constexpr char kNotifyExecutorSql[] =
    "SELECT pg_notify('jobwheel_executors', 'e|' || "
    "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT || '|' || $1 || '|' || $2)";

v1::App AppFromRow(const pqxx::row& row) {
  v1::App app;
  app.set_name(row[0].as<std::string>());
  app.set_title(row[1].as<std::string>());
  app.set_address_type(sql::AddressTypeFromSqlName(row[2].as<std::string>()));
  for (std::string& a : FromPgArray(row[3])) app.add_manual_addresses(std::move(a));
  *app.mutable_create_time() = ToProto(FromMicros(row[4].as<int64_t>()));
  *app.mutable_update_time() = ToProto(FromMicros(row[5].as<int64_t>()));
  return app;
}

std::vector<std::string> Addresses(const v1::App& app) {
  return {app.manual_addresses().begin(), app.manual_addresses().end()};
}

// Records `audit` (when set) for app `name`, with its fields before and after (nullptr: none).
void AuditApp(pqxx::work& tx, const v1::AuditEvent* audit, const std::string& name,
              const v1::App* before, const v1::App* after) {
  if (audit == nullptr) return;
  v1::AuditEvent e = *audit;
  e.set_target(absl::StrCat("app ", name));
  e.add_apps(name);
  auto field = [&](absl::string_view f, auto value) {
    AddAuditChange(e, f, before != nullptr ? value(*before) : "",
                   after != nullptr ? value(*after) : "");
  };
  field("name", [](const v1::App& a) { return AuditQuoted(a.name()); });
  field("title", [](const v1::App& a) { return a.title().empty() ? "" : AuditQuoted(a.title()); });
  field("address_type", [](const v1::App& a) { return v1::AddressType_Name(a.address_type()); });
  field("manual_addresses", [](const v1::App& a) { return AuditQuotedList(Addresses(a)); });
  InsertAuditEvent(tx, e);
}

}  // namespace

absl::StatusOr<v1::App> PgAppStore::Create(const v1::App& app, const v1::AuditEvent* audit) {
  v1::App out;
  absl::Status s = pool_.Run("create_app", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    out = AppFromRow(tx.exec_params1(kCreateSql, app.name(), app.title(),
                                     sql::AddressTypeSqlName(app.address_type()),
                                     ToPgArray(Addresses(app))));
    AuditApp(tx, audit, app.name(), nullptr, &out);
    tx.exec_params(kNotifyAppSql, app.name());
    tx.commit();
  });
  if (s.code() == absl::StatusCode::kAlreadyExists) {
    return absl::AlreadyExistsError(absl::StrCat("app ", app.name(), ": already exists"));
  }
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<v1::App> PgAppStore::Update(const v1::App& app, const v1::AuditEvent* audit) {
  v1::App out;
  bool found = false;
  absl::Status s = pool_.Run("update_app", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    pqxx::result current = tx.exec_params(kLockSql, app.name());
    found = !current.empty();
    if (!found) return;
    const v1::App before = AppFromRow(current[0]);
    pqxx::result r =
        tx.exec_params(kUpdateSql, app.name(), app.title(),
                       sql::AddressTypeSqlName(app.address_type()), ToPgArray(Addresses(app)));
    found = !r.empty();
    if (!found) return;
    out = AppFromRow(r[0]);
    AuditApp(tx, audit, app.name(), &before, &out);
    tx.exec_params(kNotifyAppSql, app.name());
    tx.commit();
  });
  if (!s.ok()) return s;
  if (!found) return absl::NotFoundError(absl::StrCat("app ", app.name(), ": not found"));
  return out;
}

absl::StatusOr<v1::App> PgAppStore::Get(const std::string& name) {
  v1::App out;
  bool found = false;
  absl::Status s = pool_.Run("get_app", [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec_params(kGetSql, name);
    found = !r.empty();
    if (found) out = AppFromRow(r[0]);
  });
  if (!s.ok()) return s;
  if (!found) return absl::NotFoundError(absl::StrCat("app ", name, ": not found"));
  return out;
}

absl::StatusOr<std::vector<v1::App>> PgAppStore::List() {
  std::vector<v1::App> out;
  absl::Status s = pool_.Run("list_apps", [&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec(kListSql);
    out.clear();
    for (const auto& row : r) out.push_back(AppFromRow(row));
  });
  if (!s.ok()) return s;
  return out;
}

absl::Status PgAppStore::Delete(const std::string& name, const v1::AuditEvent* audit) {
  int64_t jobs = 0;
  bool found = false;
  absl::Status s = pool_.Run("delete_app", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    // Lock the app row so a concurrent job creation check sees a consistent
    // answer.
    pqxx::result locked = tx.exec_params(kLockSql, name);
    found = !locked.empty();
    if (!found) return;
    jobs = tx.exec_params1(kCountJobsSql, name)[0].as<int64_t>();
    if (jobs > 0) return;
    const v1::App before = AppFromRow(locked[0]);
    AuditApp(tx, audit, name, &before, nullptr);
    tx.exec_params(kDeleteSql, name);
    tx.exec_params(kDeleteOfflineExecutorsSql, name);
    tx.exec_params(kNotifyAppSql, name);
    tx.commit();
  });
  if (!s.ok()) return s;
  if (!found) return absl::NotFoundError(absl::StrCat("app ", name, ": not found"));
  if (jobs > 0) {
    return absl::FailedPreconditionError(absl::StrCat("app ", name, ": still used by ", jobs,
                                                      jobs == 1 ? " job" : " jobs",
                                                      "; delete or move them first"));
  }
  return absl::OkStatus();
}

absl::Status PgAppStore::SetDraining(const std::string& app, const std::string& address,
                                     bool draining, const std::string& reason,
                                     const std::string& actor, const v1::AuditEvent* audit) {
  bool found = false;
  absl::Status s = pool_.Run("set_executor_draining", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    // Shared: the app cannot be deleted meanwhile (its drains go with it).
    found = !tx.exec_params("SELECT 1 FROM apps WHERE name = $1 FOR SHARE", app).empty();
    if (!found) return;
    pqxx::result drain = tx.exec_params(kDrainOfSql, app, address);
    const bool was = !drain.empty();
    const std::string was_reason = was ? drain[0][0].as<std::string>() : "";
    if (audit != nullptr && (was != draining || (draining && was_reason != reason))) {
      v1::AuditEvent e = *audit;
      e.set_target(absl::StrCat("executor ", app, "/", address));
      e.add_apps(app);
      AddAuditChange(e, "draining", was ? "true" : "false", draining ? "true" : "false");
      AddAuditChange(e, "reason", was_reason.empty() ? "" : AuditQuoted(was_reason),
                     !draining || reason.empty() ? "" : AuditQuoted(reason));
      InsertAuditEvent(tx, e);
    }
    if (draining) {
      tx.exec_params(kDrainSql, app, address, reason, actor);
    } else {
      tx.exec_params(kUndrainSql, app, address);
    }
    tx.exec_params(kNotifyExecutorSql, app, address);
    tx.commit();
  });
  if (!s.ok()) return s;
  if (!found) return absl::NotFoundError(absl::StrCat("app ", app, ": not found"));
  return absl::OkStatus();
}

}  // namespace jobwheel::registry
