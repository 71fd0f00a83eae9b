#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_TOKEN_ADMIN_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_TOKEN_ADMIN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "common/auth/token_authenticator.h"
#include "common/auth/token_store.h"
#include "common/time/clock.h"
#include "jobwheel/v1/token_admin.pb.h"

namespace jobwheel::scheduler::admin {

inline constexpr int kMaxTokenNameLength = 128;
inline constexpr int kMaxTokenApps = 100;

// API token administration: validates requests, generates a secret (32 random bytes) and
// stores only its SHA-256. Authorization (ADMIN only) is the service's job. No gRPC types.
// Thread-safe; the store and clock must outlive it.
class TokenAdmin {
 public:
  TokenAdmin(TokenStore& store, const Clock& clock) : store_(store), clock_(clock) {}

  // The response carries the secret; it is never retrievable again. Writes take `audit`
  // (nullptr: not audited): the event the store records with the change (TokenStore).
  absl::StatusOr<jobwheel::v1::CreateTokenResponse> CreateToken(
      const jobwheel::v1::CreateTokenRequest& req, const jobwheel::v1::AuditEvent* audit = nullptr);
  absl::StatusOr<jobwheel::v1::ListTokensResponse> ListTokens(
      const jobwheel::v1::ListTokensRequest& req);
  // Idempotent (a second revoke is not audited). Servers stop accepting the token within
  // their cache period (a few seconds).
  absl::StatusOr<jobwheel::v1::Token> RevokeToken(int64_t id,
                                                  const jobwheel::v1::AuditEvent* audit = nullptr);
  // The caller's own token: the stored row of an API token; for a bootstrap token (no row)
  // id 0 with the principal's name and role. UNAUTHENTICATED when the API token was revoked
  // since it was authenticated (the authenticator caches for a few seconds).
  absl::StatusOr<jobwheel::v1::Token> CurrentToken(const Principal& caller);

  // INVALID_ARGUMENT naming the field, or OK (exposed for the request fuzzer).
  static absl::Status Validate(const jobwheel::v1::CreateTokenRequest& req, absl::Time now);

 private:
  TokenStore& store_;
  const Clock& clock_;
};

// Conversions between the proto and the store's types.
jobwheel::v1::Token TokenToProto(const TokenRow& row);
jobwheel::v1::Role RoleToProto(Role role);

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_TOKEN_ADMIN_H_
