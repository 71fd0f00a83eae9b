#ifndef JOBWHEEL_SERVICES_REGISTRY_SESSION_CREDENTIAL_H_
#define JOBWHEEL_SERVICES_REGISTRY_SESSION_CREDENTIAL_H_

#include "absl/status/status.h"

namespace jobwheel::registry {

// The credential a heartbeat stream registered with, checked again while the stream lives
// so that a revoked, expired or re-scoped token loses its open stream within seconds.
// Implementations are thread-safe; Check may block (a token lookup in the database).
class SessionCredential {
 public:
  virtual ~SessionCredential() = default;
  // OK while the credential still allows the registration. UNAUTHENTICATED or
  // PERMISSION_DENIED once it does not (the Registry then closes the stream with it); any
  // other error (e.g. UNAVAILABLE: the token store is unreachable) leaves the stream alone.
  virtual absl::Status Check() = 0;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_SESSION_CREDENTIAL_H_
