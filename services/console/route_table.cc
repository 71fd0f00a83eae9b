#include "services/console/route_table.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "jobwheel/v1/app_admin.pb.h"
#include "jobwheel/v1/job_admin.pb.h"
#include "jobwheel/v1/leadership.pb.h"
#include "jobwheel/v1/registry.pb.h"
#include "jobwheel/v1/token_admin.pb.h"

namespace jobwheel::console {
namespace {

constexpr absl::string_view kApiPrefix = "/jobwheel.v1.";

// A generated file registers its descriptors only when its object file is linked; naming one
// message of each file keeps the linker from dropping the files nothing else references.
void LinkAdminProtoFiles() {
  static const void* anchors[] = {
      v1::ListJobsRequest::descriptor(),      v1::ListTokensRequest::descriptor(),
      v1::GetLeaderRequest::descriptor(),     v1::ListAppsRequest::descriptor(),
      v1::ListExecutorsRequest::descriptor(),
  };
  (void)anchors;
}

}  // namespace

absl::string_view BackendName(Backend backend) {
  switch (backend) {
    case Backend::kScheduler:
      return "scheduler";
    case Backend::kRegistry:
      return "registry";
  }
  return "unknown";
}

RouteTable::RouteTable(const std::vector<ServiceRule>& rules) {
  LinkAdminProtoFiles();
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  for (const ServiceRule& rule : rules) {
    const google::protobuf::ServiceDescriptor* service = pool->FindServiceByName(rule.service);
    if (service == nullptr) continue;
    for (int i = 0; i < service->method_count(); ++i) {
      const google::protobuf::MethodDescriptor* method = service->method(i);
      // The gateway speaks unary Connect only.
      if (method->client_streaming() || method->server_streaming()) continue;
      if (!rule.methods.empty() && std::find(rule.methods.begin(), rule.methods.end(),
                                             method->name()) == rule.methods.end()) {
        continue;
      }
      RpcRoute route;
      route.method = method;
      route.backend = rule.backend;
      route.grpc_path = absl::StrCat("/", service->full_name(), "/", method->name());
      routes_.emplace(absl::StrCat(service->full_name(), "/", method->name()), std::move(route));
    }
  }
}

const RouteTable& RouteTable::Console() {
  static const RouteTable* table = new RouteTable({
      {"jobwheel.v1.JobAdminService", Backend::kScheduler, {}},
      {"jobwheel.v1.TokenAdminService", Backend::kScheduler, {}},
      {"jobwheel.v1.LeadershipService", Backend::kScheduler, {}},
      {"jobwheel.v1.AppAdminService", Backend::kRegistry, {}},
      // Heartbeat and WatchExecutors are the executors' and dispatchers' business.
      {"jobwheel.v1.RegistryService", Backend::kRegistry, {"ListExecutors"}},
  });
  return *table;
}

absl::StatusOr<RpcRoute> RouteTable::Find(absl::string_view http_path) const {
  absl::string_view procedure = http_path;
  if (!absl::ConsumePrefix(&procedure, "/")) {
    return absl::UnimplementedError(absl::StrCat("no procedure at ", http_path));
  }
  auto it = routes_.find(procedure);
  if (it == routes_.end()) {
    return absl::UnimplementedError(absl::StrCat(procedure, " is not a procedure of this console"));
  }
  return it->second;
}

bool RouteTable::IsApiPath(absl::string_view http_path) {
  return absl::StartsWith(http_path, kApiPrefix);
}

std::vector<std::string> RouteTable::Procedures() const {
  std::vector<std::string> names;
  names.reserve(routes_.size());
  for (const auto& [name, route] : routes_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace jobwheel::console
