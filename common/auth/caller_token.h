#ifndef JOBWHEEL_COMMON_AUTH_CALLER_TOKEN_H_
#define JOBWHEEL_COMMON_AUTH_CALLER_TOKEN_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"

// Short-lived caller tokens between components: each caller (the scheduler, the dispatchers)
// signs its own tokens with its own Ed25519 private key; each callee holds only the public keys
// of the callers it accepts. A token is
//
//   jwc1.<base64url(payload)>.<base64url(Ed25519 signature over "jwc1." + payload part)>
//
// with the payload exactly {"iss":"<issuer>","aud":"<audience>","iat":<unix s>,"exp":<unix s>}
// (this field order, no spaces, no escapes; anything else is refused). It is sent as
// `authorization: Bearer <token>`. Tokens are never logged.
namespace jobwheel {

// Issuers.
inline constexpr absl::string_view kIssuerScheduler = "scheduler";
inline constexpr absl::string_view kIssuerDispatcher = "dispatcher";
// Audiences of the services (an executor's audience is its advertised address).
inline constexpr absl::string_view kAudienceDispatcher = "dispatcher";
inline constexpr absl::string_view kAudienceRegistry = "registry";

inline constexpr absl::string_view kCallerTokenPrefix = "jwc1.";
// Longer tokens are refused before any decoding.
inline constexpr size_t kMaxCallerTokenSize = 1024;
// Longest issuer or audience a token may name.
inline constexpr size_t kMaxCallerTokenClaimSize = 256;
// Longest lifetime a verifier accepts (exp - iat).
inline constexpr absl::Duration kMaxCallerTokenLifetime = absl::Seconds(60);

// An Ed25519 key pair in PEM (PKCS#8 private key, SubjectPublicKeyInfo public key).
struct CallerKeyPair {
  std::string private_pem;
  std::string public_pem;
};
// A new random key pair (tests; production keys come from `openssl genpkey -algorithm ed25519`).
absl::StatusOr<CallerKeyPair> GenerateCallerKeyPair();

// Reads a whole file (a key). Empty path → empty string; an unreadable or empty file is
// INVALID_ARGUMENT naming `flag`.
absl::StatusOr<std::string> ReadKeyFile(const std::string& path, absl::string_view flag);

// Signs caller tokens for one issuer. Tokens are cached per audience and renewed when half of
// their lifetime has passed, so a callee never sees one about to expire. Thread-safe.
class CallerTokenSigner {
 public:
  struct Options {
    std::string issuer;                           // kIssuerScheduler or kIssuerDispatcher.
    absl::Duration lifetime = absl::Seconds(60);  // At most kMaxCallerTokenLifetime.
    size_t max_cached_audiences = 4096;           // The cache is cleared when it is full.
  };

  // `private_pem`: one Ed25519 private key in PEM.
  static absl::StatusOr<std::unique_ptr<CallerTokenSigner>> Create(absl::string_view private_pem,
                                                                   Options options,
                                                                   const Clock& clock);
  ~CallerTokenSigner();
  CallerTokenSigner(const CallerTokenSigner&) = delete;
  CallerTokenSigner& operator=(const CallerTokenSigner&) = delete;

  // A token for `audience` valid now; INVALID_ARGUMENT for an empty or oversize audience or
  // one with quotes, backslashes or control characters.
  absl::StatusOr<std::string> TokenFor(absl::string_view audience);
  // A fresh token with explicit times (tests of the verifier; no cache).
  absl::StatusOr<std::string> Sign(absl::string_view audience, absl::Time issued_at,
                                   absl::Time expires_at) const;

  const std::string& issuer() const { return options_.issuer; }

 private:
  struct Key;
  struct Cached {
    std::string token;
    absl::Time renew_at;
  };
  CallerTokenSigner(std::unique_ptr<Key> key, Options options, const Clock& clock);

  const std::unique_ptr<Key> key_;
  const Options options_;
  const Clock& clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Cached> cache_ ABSL_GUARDED_BY(mu_);
};

// Who signed a verified token.
struct CallerIdentity {
  std::string issuer;
};

// Verifies caller tokens addressed to one audience. Only issuers with at least one public key
// are accepted; an issuer may have several keys (rotation: list the new key next to the old one,
// switch the signer, then drop the old key). Thread-safe.
class CallerTokenVerifier {
 public:
  struct Options {
    // Issuer → PEM text holding one or more Ed25519 public keys.
    std::map<std::string, std::string> public_keys_pem;
    // The audience tokens must name. May be left empty and set later with SetAudience (an
    // executor learns its advertised address once its port is bound); until then every token
    // is refused.
    std::string audience;
    // How far the callee's clock may be behind (iat in the future) or ahead (exp in the past).
    absl::Duration max_clock_skew = absl::Seconds(10);
  };

  // INVALID_ARGUMENT when no issuer has a key, or a PEM holds no key, or a key that is not
  // Ed25519.
  static absl::StatusOr<std::unique_ptr<CallerTokenVerifier>> Create(Options options,
                                                                     const Clock& clock);
  ~CallerTokenVerifier();
  CallerTokenVerifier(const CallerTokenVerifier&) = delete;
  CallerTokenVerifier& operator=(const CallerTokenVerifier&) = delete;

  void SetAudience(absl::string_view audience);

  // UNAUTHENTICATED for anything but a well-formed token of a known issuer, signed by one of its
  // keys, for this audience, valid now (within the skew), with a lifetime of at most
  // kMaxCallerTokenLifetime. Messages never echo the token.
  absl::StatusOr<CallerIdentity> Verify(absl::string_view token) const;

 private:
  struct Keys;
  CallerTokenVerifier(std::unique_ptr<Keys> keys, Options options, const Clock& clock);

  const std::unique_ptr<Keys> keys_;
  const absl::Duration max_clock_skew_;
  const Clock& clock_;
  mutable absl::Mutex mu_;
  std::string audience_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUTH_CALLER_TOKEN_H_
