#ifndef JOBWHEEL_SERVICES_REGISTRY_TOKEN_SESSION_CREDENTIAL_H_
#define JOBWHEEL_SERVICES_REGISTRY_TOKEN_SESSION_CREDENTIAL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/types/optional.h"
#include "common/auth/token_authenticator.h"
#include "services/registry/session_credential.h"

namespace jobwheel::registry {

// A heartbeat stream's bearer token, authorized again on each Check through the
// authenticator (whose cache makes a revoked token fail within its cache time): still an
// EXECUTOR token for `app`. Thread-safe; the authenticator must outlive it.
class TokenSessionCredential final : public SessionCredential {
 public:
  TokenSessionCredential(TokenAuthenticator& authenticator,
                         absl::optional<std::string> authorization, std::string app);

  absl::Status Check() override;

 private:
  TokenAuthenticator& authenticator_;
  const absl::optional<std::string> authorization_;
  const std::string app_;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_TOKEN_SESSION_CREDENTIAL_H_
