#ifndef JOBWHEEL_COMMON_AUTH_TOKEN_AUTHENTICATOR_H_
#define JOBWHEEL_COMMON_AUTH_TOKEN_AUTHENTICATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "common/auth/failed_auth_limiter.h"
#include "common/base/log_rate_limiter.h"
#include "common/base/lru_map.h"
#include "common/time/clock.h"
#include "grpcpp/grpcpp.h"

// Who is calling, and what they may do. Bearer tokens come from two places: bootstrap tokens
// read from files at start (--admin_token_file, --executor_token_file)
// and API tokens created through TokenAdminService, stored in PostgreSQL as SHA-256 hashes.
namespace jobwheel {

// The numeric values are fixed; 4 (a former internal role) is not reused. Stored tokens name
// their role (RoleName), never its number.
enum class Role {
  kAdmin = 0,     // Everything.
  kOperator = 1,  // Jobs and runs of its apps.
  kViewer = 2,    // Read-only; its apps ("*": every app; none: no app).
  kExecutor = 3,  // Registers for and reports results of its apps.
};

// "ADMIN", "OPERATOR", "VIEWER", "EXECUTOR" (the `tokens.role` column values).
absl::string_view RoleName(Role role);
// nullopt for any other name: a stored token whose role is not one of these is refused.
absl::optional<Role> RoleFromName(absl::string_view name);

// The app list entry that means every app (VIEWER and OPERATOR tokens only). An empty app
// list means no app.
inline constexpr absl::string_view kAllApps = "*";

// An authenticated caller.
struct Principal {
  Role role = Role::kViewer;
  bool all_apps = false;          // Not restricted to `apps`.
  std::vector<std::string> apps;  // When !all_apps: the apps it may act on.
  int64_t token_id = 0;           // The API token's id; 0 for bootstrap tokens.
  std::string name;               // Token name, "bootstrap-admin", "insecure-dev"...
  bool insecure_dev = false;      // --insecure_dev: every check passes.
};

// Authorization. Each is false for roles it does not concern (e.g. CanWriteApp for a viewer).
bool IsAdmin(const Principal& p);
// ADMIN, OPERATOR or VIEWER: a caller of the admin APIs.
bool IsAdminApiRole(const Principal& p);
// Read jobs, runs and logs of `app`: admin, operator of app, viewer of app (or of all apps).
bool CanReadApp(const Principal& p, absl::string_view app);
// Change jobs of `app`, trigger and kill its runs: admin, operator of app.
bool CanWriteApp(const Principal& p, absl::string_view app);
// Register an executor of `app` and report its results: executor of app (or of all apps).
bool CanServeApp(const Principal& p, absl::string_view app);
// The apps a read by `p` is confined to; nullopt when it may read every app.
absl::optional<std::vector<std::string>> ReadableApps(const Principal& p);

// UNAUTHENTICATED unless p's role is one of `roles` (the token is not a credential this
// service accepts at all, e.g. an admin token presented to an executor); OK otherwise.
// Insecure-dev principals always pass.
absl::Status RequireRole(const Principal& p, absl::Span<const Role> roles,
                         absl::string_view service);
// PERMISSION_DENIED "<what>: needs <need>; token <name> is <ROLE>[ for apps a, b]".
absl::Status PermissionDenied(const Principal& p, absl::string_view what, absl::string_view need);

// API token secrets: "jw_" + 64 lowercase hex digits (32 random bytes from OpenSSL).
inline constexpr absl::string_view kTokenSecretPrefix = "jw_";
absl::StatusOr<std::string> GenerateTokenSecret();
bool LooksLikeTokenSecret(absl::string_view token);
// Lowercase hex SHA-256 of `secret` (what the tokens table stores).
std::string HashTokenSecret(absl::string_view secret);

// An API token as the authenticator needs it.
struct StoredToken {
  int64_t id = 0;
  std::string name;
  Role role = Role::kViewer;
  std::vector<std::string> apps;
  absl::optional<absl::Time> expire_time;
};

// Finds API tokens by the hash of their secret (PostgreSQL in production: PgTokenStore).
class TokenLookup {
 public:
  virtual ~TokenLookup() = default;
  // The token with this secret hash that is not revoked, or nullopt. May record its use.
  // UNAUTHENTICATED (with the reason) for a stored token that cannot be used, e.g. one whose
  // role is not a Role of this version.
  virtual absl::StatusOr<absl::optional<StoredToken>> FindActive(
      const std::string& secret_hash) = 0;
};

// A front end (the console) that serves many clients over one connection names each call's
// client in `jobwheel-client` (an IP address) and proves that it is a front end the operator
// set up with its own token in `jobwheel-proxy-authorization` ("Bearer <token>").
inline constexpr char kProxyAuthorizationMetadata[] = "jobwheel-proxy-authorization";
inline constexpr char kForwardedClientMetadata[] = "jobwheel-client";

// What a call says about the client it was forwarded for (copied from its metadata).
struct ForwardedClient {
  absl::optional<std::string> proxy_authorization;
  std::string client;
};
ForwardedClient ReadForwardedClient(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

// The value of the call's `authorization` metadata, if any. Copy it on the reactor thread and
// authenticate on a worker thread (Authenticate may query the database).
absl::optional<std::string> AuthorizationHeader(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

// Resolves a call's bearer token to a Principal: bootstrap tokens first (constant-time
// compare), then API tokens through `lookup` (nullable: bootstrap tokens only) with a small
// cache, so a revoked token stops working within `cache_ttl`.
//
// Failed authentications are cheap: unknown hashes are remembered (a bounded LRU apart from the
// valid tokens, so junk cannot evict them) for `negative_cache_ttl`, and each peer (the
// caller's IP, when the service passes it) may fail `failed_auth.burst` times and then
// `failed_auth.per_second` times a second. A peer over that limit gets RESOURCE_EXHAUSTED for
// every token that is neither a bootstrap token nor an API token this authenticator has seen
// valid, without a database lookup; tokens it knows keep working. Refusals are logged at most
// once per peer per 10 s, with the count of the others. Thread-safe.
class TokenAuthenticator {
 public:
  struct Options {
    // Every call is an ADMIN (and executor of every app). Development only.
    bool insecure_dev = false;
    std::string admin_token;     // → ADMIN.
    std::string executor_token;  // → EXECUTOR of every app.
    absl::Duration cache_ttl = absl::Seconds(3);
    absl::Duration negative_cache_ttl = absl::Seconds(1);
    size_t max_cache_entries = 10000;           // Valid API tokens (LRU).
    size_t max_negative_cache_entries = 10000;  // Unknown or revoked hashes (LRU).
    FailedAuthLimiter::Options failed_auth;
  };

  // Counters for tests and metrics.
  struct Stats {
    int64_t lookups = 0;        // Calls to TokenLookup::FindActive.
    int64_t negative_hits = 0;  // Unknown tokens answered from the negative cache.
    int64_t rate_limited = 0;   // RESOURCE_EXHAUSTED answers.
    int64_t failures = 0;       // UNAUTHENTICATED answers.
  };

  TokenAuthenticator(Options options, TokenLookup* lookup, const Clock& clock);

  // UNAUTHENTICATED when the header is missing, not "Bearer <token>", or names no valid token
  // (unknown, revoked, expired); UNAVAILABLE when the token store cannot be reached;
  // RESOURCE_EXHAUSTED when `peer` (PeerHost of the call; empty: not limited) has failed too
  // often and the token is not one this authenticator knows.
  absl::StatusOr<Principal> Authenticate(const absl::optional<std::string>& authorization,
                                         absl::string_view peer = {});
  absl::StatusOr<Principal> Authenticate(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
    return Authenticate(AuthorizationHeader(metadata));
  }
  absl::StatusOr<Principal> AuthenticateToken(absl::string_view token, absl::string_view peer = {});
  // Authenticate, then RequireRole(principal, roles, service): the principal of a token this
  // service accepts at all.
  absl::StatusOr<Principal> Authorize(const absl::optional<std::string>& authorization,
                                      absl::Span<const Role> roles, absl::string_view service,
                                      absl::string_view peer = {});

  // The key of the failed-authentication limit of a call from `peer` (PeerHost): `peer`, or
  // "<client> via <peer>" when the call names a forwarded client (an IP address) and its proxy
  // authorization is a valid token. Only a caller holding a valid token can name clients
  // (anonymous junk still counts against its own address), so a front end's users each have
  // their own budget instead of sharing the front end's. A proxy authorization that fails
  // counts as a failure of `peer`. May query the token store (run it where Authenticate runs).
  std::string LimitKey(const ForwardedClient& forwarded, absl::string_view peer);

  Stats stats() const;

  bool insecure_dev() const { return options_.insecure_dev; }

 private:
  struct CacheEntry {
    absl::optional<StoredToken> token;
    absl::Time fetched;
  };
  absl::StatusOr<absl::optional<StoredToken>> Lookup(const std::string& hash,
                                                     absl::string_view peer);
  // Counts a failure of `peer` and returns `status` (or RESOURCE_EXHAUSTED when the peer was
  // already over its limit).
  absl::Status Fail(absl::string_view peer, absl::Status status);
  absl::Status RateLimited(absl::string_view peer);
  // Logs a refusal of `peer`, at most once per peer per interval.
  void LogRefusal(absl::string_view peer, const absl::Status& status);

  const Options options_;
  TokenLookup* const lookup_;
  const Clock& clock_;
  FailedAuthLimiter limiter_;
  LogRateLimiter refusal_log_;
  mutable absl::Mutex mu_;
  LruMap<std::string, CacheEntry> cache_ ABSL_GUARDED_BY(mu_);
  LruMap<std::string, absl::Time> negative_cache_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUTH_TOKEN_AUTHENTICATOR_H_
