#ifndef JOBWHEEL_SERVICES_REGISTRY_IN_MEMORY_EXECUTOR_STORE_H_
#define JOBWHEEL_SERVICES_REGISTRY_IN_MEMORY_EXECUTOR_STORE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "services/registry/executor_store.h"

namespace jobwheel::registry {

// ExecutorStore in memory for tests, with leases on an injected clock, a change
// log that InMemoryChangeFeed delivers, call counters and failure injection.
// Thread-safe.
class InMemoryExecutorStore : public ExecutorStore {
 public:
  struct Row {
    v1::Executor executor;
    std::string replica_id;
    std::string session_id;
    std::string instance_id;
    bool online = false;
    absl::Time lease_until;
  };

  explicit InMemoryExecutorStore(Clock& clock) : clock_(clock) {}

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

  // Test controls.
  void SetFailing(bool failing);
  void SetApp(const AppConfig& app);
  // Simulates a database failover that lost every row.
  void DropAllRows();
  absl::optional<Row> GetRow(const ExecutorKey& key) const;
  int renew_calls() const;
  // Changes not yet taken by a feed.
  std::vector<Change> TakeChanges();

 private:
  absl::Status Check() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Announce(Change::Kind kind, const std::string& app, const std::string& address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock& clock_;
  mutable absl::Mutex mu_;
  std::map<ExecutorKey, Row> rows_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, AppConfig> apps_ ABSL_GUARDED_BY(mu_);
  std::vector<Change> changes_ ABSL_GUARDED_BY(mu_);
  bool failing_ ABSL_GUARDED_BY(mu_) = false;
  int renew_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

// Delivers an InMemoryExecutorStore's changes without blocking; Connect can be
// made to fail.
class InMemoryChangeFeed : public ChangeFeed {
 public:
  explicit InMemoryChangeFeed(InMemoryExecutorStore& store) : store_(store) {}
  absl::Status Connect() override;
  absl::StatusOr<std::vector<Change>> Wait(absl::Duration timeout) override;

 private:
  InMemoryExecutorStore& store_;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_IN_MEMORY_EXECUTOR_STORE_H_
