#ifndef JOBWHEEL_SERVICES_REGISTRY_REGISTRY_SERVER_OPTIONS_H_
#define JOBWHEEL_SERVICES_REGISTRY_REGISTRY_SERVER_OPTIONS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc/grpc_server.h"
#include "common/server/readiness.h"
#include "services/registry/address_policy.h"
#include "services/registry/registry.h"

namespace jobwheel::registry {

// Everything the registry's flags say, checked by Validate() before anything starts.
struct RegistryServerOptions {
  std::string listen;
  std::string metrics_address;
  std::string db_dsn;
  int db_pool_size = 8;
  absl::Duration drain_grace;
  // --db_check_interval, --db_check_timeout, --drain_delay.
  ReadinessOptions readiness;
  // replica_id, beat_interval, beat_deadline, lease and register_deadline come from flags.
  RegistryOptions registry;
  bool insecure_dev = false;
  std::string executor_token;
  std::string dispatcher_public_keys;  // PEM.
  std::string admin_token;
  ServerTls tls;
  // --allow_loopback_executors, --allow_link_local_executors, --executor_address_allowlist.
  std::string allow_loopback_executors = "auto";
  bool allow_link_local_executors = false;
  std::string executor_address_allowlist;

  // INVALID_ARGUMENT naming the flag of the first bad value.
  absl::Status Validate() const;

  // The executor address policy the address flags describe (for --listen's host when
  // --allow_loopback_executors is auto); INVALID_ARGUMENT naming the flag when they are bad.
  absl::StatusOr<AddressPolicyOptions> AddressPolicy() const;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_REGISTRY_SERVER_OPTIONS_H_
