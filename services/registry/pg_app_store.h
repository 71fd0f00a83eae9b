#ifndef JOBWHEEL_SERVICES_REGISTRY_PG_APP_STORE_H_
#define JOBWHEEL_SERVICES_REGISTRY_PG_APP_STORE_H_

#include "common/pg/pg_pool.h"
#include "services/registry/app_store.h"

namespace jobwheel::registry {

// AppStore on PostgreSQL table `apps`; changes notify channel
// `jobwheel_executors` with payload "a|<unix micros>|<name>" in the same
// transaction, and audited ones insert their event into audit_events there too. Thread-safe.
class PgAppStore : public AppStore {
 public:
  explicit PgAppStore(PgPool& pool) : pool_(pool) {}

  using AppStore::Create;
  using AppStore::Delete;
  using AppStore::SetDraining;
  using AppStore::Update;
  absl::StatusOr<v1::App> Create(const v1::App& app, const v1::AuditEvent* audit) override;
  absl::StatusOr<v1::App> Update(const v1::App& app, const v1::AuditEvent* audit) override;
  absl::StatusOr<v1::App> Get(const std::string& name) override;
  absl::StatusOr<std::vector<v1::App>> List() override;
  absl::Status Delete(const std::string& name, const v1::AuditEvent* audit) override;
  absl::Status SetDraining(const std::string& app, const std::string& address, bool draining,
                           const std::string& reason, const std::string& actor,
                           const v1::AuditEvent* audit) override;

 private:
  PgPool& pool_;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_PG_APP_STORE_H_
