#include "services/registry/token_session_credential.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace jobwheel::registry {

TokenSessionCredential::TokenSessionCredential(TokenAuthenticator& authenticator,
                                               absl::optional<std::string> authorization,
                                               std::string app)
    : authenticator_(authenticator),
      authorization_(std::move(authorization)),
      app_(std::move(app)) {}

absl::Status TokenSessionCredential::Check() {
  absl::StatusOr<Principal> p =
      authenticator_.Authorize(authorization_, {Role::kExecutor}, "RegistryService/Heartbeat");
  if (!p.ok()) return p.status();
  if (!CanServeApp(*p, app_)) {
    return PermissionDenied(*p, "register.app", absl::StrCat("an EXECUTOR token for app ", app_));
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::registry
