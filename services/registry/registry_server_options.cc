#include "services/registry/registry_server_options.h"

#include "absl/strings/str_cat.h"
#include "common/auth/insecure_dev.h"

namespace jobwheel::registry {

absl::Status RegistryServerOptions::Validate() const {
  if (listen.empty()) return absl::InvalidArgumentError("--listen: must not be empty");
  if (db_dsn.empty()) return absl::InvalidArgumentError("--db_dsn: must not be empty");
  if (db_pool_size < 2) return absl::InvalidArgumentError("--db_pool_size: must be at least 2");
  if (drain_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--drain_grace: must not be negative");
  }
  if (absl::Status s = readiness.Validate(); !s.ok()) return s;
  if (!insecure_dev && dispatcher_public_keys.empty()) {
    return absl::InvalidArgumentError(
        "no credentials: --dispatcher_public_key_file is required (with "
        "--executor_token_file and --admin_token_file, or API tokens from TokenAdminService), "
        "or --insecure_dev for development");
  }
  if (absl::Status s = CheckInsecureDevListen(insecure_dev, listen); !s.ok()) return s;
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  // The fields that flags set (replica_id, beat_interval, beat_deadline, lease,
  // register_deadline) are named after their flags.
  if (absl::Status s = registry.Validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--", s.message()));
  }
  return AddressPolicy().status();
}

absl::StatusOr<AddressPolicyOptions> RegistryServerOptions::AddressPolicy() const {
  return AddressPolicyOptionsFromFlags(allow_loopback_executors, allow_link_local_executors,
                                       executor_address_allowlist, listen);
}

}  // namespace jobwheel::registry
