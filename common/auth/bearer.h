#ifndef JOBWHEEL_COMMON_AUTH_BEARER_H_
#define JOBWHEEL_COMMON_AUTH_BEARER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/auth/caller_token.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel {

// Which bearer tokens a server accepts on a group of RPCs: one of `tokens`, or a caller token
// that `callers` verifies (signed by an issuer it has a key of, for its audience).
// `insecure_dev` accepts anything (only when the operator explicitly started in insecure dev
// mode).
struct TokenPolicy {
  bool insecure_dev = false;
  std::vector<std::string> tokens;
  std::shared_ptr<const CallerTokenVerifier> callers;
};

// Compares in time that depends only on the lengths, not on where the inputs differ.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

// The token of an `authorization` metadata value "Bearer <token>"; UNAUTHENTICATED otherwise.
absl::StatusOr<absl::string_view> BearerToken(absl::string_view authorization);

// The token of a call's `authorization: Bearer <token>` metadata; UNAUTHENTICATED when it is
// missing or not a bearer token.
absl::StatusOr<absl::string_view> BearerTokenOf(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

// OK when the call's `authorization: Bearer <token>` metadata matches one of the policy's
// tokens (constant-time compare); UNAUTHENTICATED otherwise.
absl::Status CheckBearer(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                         const TokenPolicy& policy);

// Reads a token from a file (trailing whitespace trimmed). Empty path → empty token.
// A named but empty or unreadable file is INVALID_ARGUMENT naming `flag`.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, absl::string_view flag);

// Adds `authorization: Bearer <token>` to an outgoing call when token is non-empty.
void AddBearer(grpc::ClientContext& ctx, const std::string& token);

// Adds `authorization: Bearer <caller token for audience>` signed by `signer`; nothing when
// signer is null (--insecure_dev). Fails only when the token cannot be signed.
absl::Status AddCallerToken(grpc::ClientContext& ctx, CallerTokenSigner* signer,
                            absl::string_view audience);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUTH_BEARER_H_
