#ifndef JOBWHEEL_SERVICES_REGISTRY_APP_STORE_H_
#define JOBWHEEL_SERVICES_REGISTRY_APP_STORE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jobwheel/v1/job_admin.pb.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::registry {

// Durable apps (executor groups). Inputs are validated by the caller;
// output-only fields (online_addresses, times) of inputs are ignored. Every
// change is announced to all registry replicas. Thread-safe.
//
// Audit: a write given an `audit` event (actor, action, peer and request id set; nullptr:
// none) records it with the change, in the same transaction, completed with the target
// ("app <name>", "executor <app>/<address>"), the app and the fields it changed. A write that
// fails or changes nothing (a drain of a drained executor with the same reason) records none.
class AppStore {
 public:
  virtual ~AppStore() = default;
  // ALREADY_EXISTS when the name is taken.
  virtual absl::StatusOr<v1::App> Create(const v1::App& app, const v1::AuditEvent* audit) = 0;
  // Replaces title, address_type and manual_addresses. NOT_FOUND when missing.
  virtual absl::StatusOr<v1::App> Update(const v1::App& app, const v1::AuditEvent* audit) = 0;
  virtual absl::StatusOr<v1::App> Get(const std::string& name) = 0;
  virtual absl::StatusOr<std::vector<v1::App>> List() = 0;
  // FAILED_PRECONDITION (naming the job count) while jobs use the app;
  // NOT_FOUND when missing.
  virtual absl::Status Delete(const std::string& name, const v1::AuditEvent* audit) = 0;
  // Drains the app's executor `address` (or undoes it) and announces the executor, so every
  // replica lists it with its new state. NOT_FOUND when the app is missing. `actor` names the
  // caller (kept with the drain).
  virtual absl::Status SetDraining(const std::string& app, const std::string& address,
                                   bool draining, const std::string& reason,
                                   const std::string& actor, const v1::AuditEvent* audit) = 0;

  // Not audited.
  absl::StatusOr<v1::App> Create(const v1::App& app) { return Create(app, nullptr); }
  absl::StatusOr<v1::App> Update(const v1::App& app) { return Update(app, nullptr); }
  absl::Status Delete(const std::string& name) { return Delete(name, nullptr); }
  absl::Status SetDraining(const std::string& app, const std::string& address, bool draining,
                           const std::string& reason, const std::string& actor) {
    return SetDraining(app, address, draining, reason, actor, nullptr);
  }
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_APP_STORE_H_
