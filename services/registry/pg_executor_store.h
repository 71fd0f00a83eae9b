#ifndef JOBWHEEL_SERVICES_REGISTRY_PG_EXECUTOR_STORE_H_
#define JOBWHEEL_SERVICES_REGISTRY_PG_EXECUTOR_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "common/pg/pg_listener.h"
#include "common/pg/pg_pool.h"
#include "common/time/clock.h"
#include "pqxx/pqxx"
#include "services/registry/executor_store.h"

namespace jobwheel::registry {

// The channel every registry change is announced on, with payloads
//   "e|<unix micros>|<app>|<address>"  (an executor row changed)
//   "a|<unix micros>|<app>"            (an app row changed)
inline constexpr char kChangeChannel[] = "jobwheel_executors";

// ExecutorStore on PostgreSQL table `executors` (and `apps` for auto-creation
// and address configuration). Each change commits with pg_notify in the same
// transaction. Thread-safe.
class PgExecutorStore : public ExecutorStore {
 public:
  explicit PgExecutorStore(PgPool& pool) : pool_(pool) {}

  using ExecutorStore::Register;
  absl::StatusOr<v1::Executor> Register(const v1::Executor& executor, const std::string& replica_id,
                                        const std::string& session_id, absl::Duration lease,
                                        const std::string& instance_id) override;
  absl::StatusOr<bool> MarkOffline(const SessionRef& session) override;
  absl::StatusOr<std::vector<LostSession>> RenewLeases(const std::string& replica_id,
                                                       const std::vector<LeaseRenewal>& renewals,
                                                       absl::Duration lease) override;
  absl::StatusOr<int> ExpireLeases() override;
  absl::StatusOr<std::vector<v1::Executor>> ListOnline() override;
  absl::StatusOr<std::vector<v1::Executor>> GetOnline(
      const std::vector<ExecutorKey>& keys) override;
  absl::StatusOr<std::vector<AppConfig>> ListAppConfigs() override;
  absl::StatusOr<std::vector<AppConfig>> GetAppConfigs(
      const std::vector<std::string>& names) override;

 private:
  PgPool& pool_;
};

// ChangeFeed on a dedicated connection that LISTENs on kChangeChannel (PgListener).
class PgChangeFeed : public ChangeFeed {
 public:
  explicit PgChangeFeed(std::string dsn, const Clock& clock = RealClock::Get());

  absl::Status Connect() override;
  absl::StatusOr<std::vector<Change>> Wait(absl::Duration timeout) override;

 private:
  PgListener listener_;
};

// Parses a kChangeChannel payload; false when malformed.
bool ParseChangePayload(const std::string& payload, Change* change);

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_PG_EXECUTOR_STORE_H_
