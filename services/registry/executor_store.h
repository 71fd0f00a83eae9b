#ifndef JOBWHEEL_SERVICES_REGISTRY_EXECUTOR_STORE_H_
#define JOBWHEEL_SERVICES_REGISTRY_EXECUTOR_STORE_H_

#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::registry {

// Identifies an executor instance: the primary key of table `executors`.
struct ExecutorKey {
  std::string app;
  std::string address;

  friend bool operator<(const ExecutorKey& a, const ExecutorKey& b) {
    return std::tie(a.app, a.address) < std::tie(b.app, b.address);
  }
  friend bool operator==(const ExecutorKey& a, const ExecutorKey& b) {
    return a.app == b.app && a.address == b.address;
  }
};

// One heartbeat session's claim on an executor row. A row is only renewed or
// taken offline through the session that wrote it last, so a stale session (the
// executor has since reconnected, perhaps to another replica) can never
// overwrite a newer one.
struct SessionRef {
  ExecutorKey key;
  std::string session_id;
};

// What a replica writes for each of its sessions when it renews their leases.
struct LeaseRenewal {
  SessionRef session;
  absl::Time last_beat_time;
  int32_t running = 0;
  int32_t queued = 0;
};

// Why a renewal did not find its row.
enum class LostReason {
  kSuperseded,  // Another session now owns the row (the executor registered
                // again elsewhere).
  kMissing,     // The row is offline or gone (lease expired, database failed over).
};

struct LostSession {
  std::string session_id;
  LostReason reason;
};

// How an app's executors are found (table `apps`). Apps without a row are AUTO.
struct AppConfig {
  std::string name;
  v1::AddressType address_type = v1::ADDRESS_TYPE_AUTO;
  std::vector<std::string> manual_addresses;
};

// A change announced on channel `jobwheel_executors`. Receivers re-read the
// named row.
struct Change {
  enum class Kind { kExecutor, kApp };
  Kind kind = Kind::kExecutor;
  std::string app;
  std::string address;      // kExecutor only.
  absl::Time committed_at;  // When the writer sent it (for the notify-lag metric).
};

// Durable executor registrations shared by all registry replicas. Every change
// that affects the live set is announced to all replicas (see ChangeFeed) in
// the same transaction. Implementations are thread-safe. Lease times are the
// store's (database) clock.
class ExecutorStore {
 public:
  virtual ~ExecutorStore() = default;

  // Inserts or replaces the row of `executor.app()`/`executor.address()` as
  // online, owned by (replica_id, session_id) and the executor process
  // `instance_id`, leased for `lease`. Creates the app (AUTO) when it does not
  // exist. Returns the stored row (register_time set).
  //
  // No takeover: an existing row is replaced only when it is offline, its lease
  // has run out, or it belongs to the same instance_id (the executor
  // reconnecting, through any replica). Otherwise nothing is written and the
  // result is ALREADY_EXISTS. The check and the write are one atomic step, so of
  // two instances racing for a free address (on any replicas) exactly one wins.
  // An empty instance_id matches no row.
  virtual absl::StatusOr<v1::Executor> Register(const v1::Executor& executor,
                                                const std::string& replica_id,
                                                const std::string& session_id, absl::Duration lease,
                                                const std::string& instance_id) = 0;
  // Register without an instance id (tests of the live view that never
  // register an address twice).
  absl::StatusOr<v1::Executor> Register(const v1::Executor& executor, const std::string& replica_id,
                                        const std::string& session_id, absl::Duration lease) {
    return Register(executor, replica_id, session_id, lease, std::string());
  }

  // Marks the row offline if `session` still owns it and it is online. Returns
  // whether it did.
  virtual absl::StatusOr<bool> MarkOffline(const SessionRef& session) = 0;

  // Extends the leases of the rows these sessions own (and records their beat
  // stats). Returns the sessions whose rows were not renewed.
  virtual absl::StatusOr<std::vector<LostSession>> RenewLeases(
      const std::string& replica_id, const std::vector<LeaseRenewal>& renewals,
      absl::Duration lease) = 0;

  // Takes every online row whose lease has run out offline. Returns how many.
  virtual absl::StatusOr<int> ExpireLeases() = 0;

  // Online rows: all of them, or those with the given keys.
  virtual absl::StatusOr<std::vector<v1::Executor>> ListOnline() = 0;
  virtual absl::StatusOr<std::vector<v1::Executor>> GetOnline(
      const std::vector<ExecutorKey>& keys) = 0;

  // App address configuration: all apps, or those named (missing ones are left
  // out).
  virtual absl::StatusOr<std::vector<AppConfig>> ListAppConfigs() = 0;
  virtual absl::StatusOr<std::vector<AppConfig>> GetAppConfigs(
      const std::vector<std::string>& names) = 0;
};

// Delivers the changes every replica announces. Not thread-safe: one reader
// thread.
class ChangeFeed {
 public:
  virtual ~ChangeFeed() = default;
  // (Re)connects and subscribes. Changes committed after it returns are
  // delivered.
  virtual absl::Status Connect() = 0;
  // Waits up to `timeout` for changes; an empty list on timeout. UNAVAILABLE
  // when the subscription is lost (call Connect again, then re-read
  // everything).
  virtual absl::StatusOr<std::vector<Change>> Wait(absl::Duration timeout) = 0;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_EXECUTOR_STORE_H_
