#ifndef JOBWHEEL_SERVICES_CONSOLE_ROUTE_TABLE_H_
#define JOBWHEEL_SERVICES_CONSOLE_ROUTE_TABLE_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace jobwheel::console {

// The backend process that serves a service.
enum class Backend { kScheduler, kRegistry };

absl::string_view BackendName(Backend backend);

// Where one Connect procedure goes.
struct RpcRoute {
  const google::protobuf::MethodDescriptor* method = nullptr;
  Backend backend = Backend::kScheduler;
  std::string grpc_path;  // "/jobwheel.v1.JobAdminService/ListJobs"
};

// The gateway's allow-list over the generated descriptor pool: which unary methods of which
// services the console exposes, and which backend serves each. Generic: a method added to an
// allowed service's proto is routed without code changes. Immutable; thread-safe.
class RouteTable {
 public:
  struct ServiceRule {
    std::string service;  // Full name, "jobwheel.v1.JobAdminService".
    Backend backend;
    std::vector<std::string> methods;  // Empty: every unary method of the service.
  };

  // Services not found in the generated pool are skipped (ServiceNames() tells).
  explicit RouteTable(const std::vector<ServiceRule>& rules);

  // The console's table: JobAdminService, TokenAdminService, LeadershipService (scheduler);
  // AppAdminService and RegistryService/ListExecutors only (registry).
  static const RouteTable& Console();

  // The route of an HTTP path "/<package>.<Service>/<Method>". UNIMPLEMENTED (naming the
  // procedure) for anything not allowed: unknown services and methods, methods outside the
  // allow-list and streaming methods alike, so the answer does not reveal which exist.
  absl::StatusOr<RpcRoute> Find(absl::string_view http_path) const;

  // Whether `http_path` is in the API's namespace ("/jobwheel.v1."), i.e. never a page.
  static bool IsApiPath(absl::string_view http_path);

  // Every routed procedure, "jobwheel.v1.JobAdminService/ListJobs", sorted.
  std::vector<std::string> Procedures() const;

 private:
  // Keyed by "jobwheel.v1.JobAdminService/ListJobs".
  absl::flat_hash_map<std::string, RpcRoute> routes_;
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_ROUTE_TABLE_H_
