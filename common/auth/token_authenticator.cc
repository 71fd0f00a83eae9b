#include "common/auth/token_authenticator.h"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/auth/bearer.h"
#include "common/base/log_text.h"
#include "spdlog/spdlog.h"

namespace jobwheel {
namespace {

constexpr size_t kSecretBytes = 32;

std::string Hex(const unsigned char* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

bool Contains(const std::vector<std::string>& apps, absl::string_view app) {
  return std::find(apps.begin(), apps.end(), app) != apps.end();
}

// An IPv4 or IPv6 address literal, nothing else.
bool IsIpAddress(const std::string& text) {
  unsigned char buf[sizeof(in6_addr)];
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return false;
  return inet_pton(AF_INET, text.c_str(), buf) == 1 || inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

absl::optional<std::string> MetadataValue(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata, absl::string_view key) {
  auto it = metadata.find(grpc::string_ref(key.data(), key.size()));
  if (it == metadata.end()) return absl::nullopt;
  return std::string(it->second.data(), it->second.size());
}

Principal BootstrapPrincipal(Role role, std::string name) {
  Principal p;
  p.role = role;
  p.all_apps = true;
  p.name = std::move(name);
  return p;
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kAdmin:
      return "ADMIN";
    case Role::kOperator:
      return "OPERATOR";
    case Role::kViewer:
      return "VIEWER";
    case Role::kExecutor:
      return "EXECUTOR";
  }
  return "UNKNOWN";
}

absl::optional<Role> RoleFromName(absl::string_view name) {
  for (Role r : {Role::kAdmin, Role::kOperator, Role::kViewer, Role::kExecutor}) {
    if (RoleName(r) == name) return r;
  }
  return absl::nullopt;
}

bool IsAdmin(const Principal& p) { return p.insecure_dev || p.role == Role::kAdmin; }

bool IsAdminApiRole(const Principal& p) {
  return p.insecure_dev || p.role == Role::kAdmin || p.role == Role::kOperator ||
         p.role == Role::kViewer;
}

bool CanReadApp(const Principal& p, absl::string_view app) {
  if (IsAdmin(p)) return true;
  if (p.role != Role::kOperator && p.role != Role::kViewer) return false;
  return p.all_apps || Contains(p.apps, app);
}

bool CanWriteApp(const Principal& p, absl::string_view app) {
  if (IsAdmin(p)) return true;
  return p.role == Role::kOperator && (p.all_apps || Contains(p.apps, app));
}

bool CanServeApp(const Principal& p, absl::string_view app) {
  if (p.insecure_dev) return true;
  return p.role == Role::kExecutor && (p.all_apps || Contains(p.apps, app));
}

absl::optional<std::vector<std::string>> ReadableApps(const Principal& p) {
  if (IsAdmin(p) || p.all_apps) return absl::nullopt;
  if (p.role != Role::kOperator && p.role != Role::kViewer) return std::vector<std::string>();
  return p.apps;
}

absl::StatusOr<Principal> TokenAuthenticator::Authorize(
    const absl::optional<std::string>& authorization, absl::Span<const Role> roles,
    absl::string_view service, absl::string_view peer) {
  absl::StatusOr<Principal> p = Authenticate(authorization, peer);
  if (!p.ok()) return p.status();
  absl::Status role = RequireRole(*p, roles, service);
  if (!role.ok()) return role;
  return p;
}

absl::Status RequireRole(const Principal& p, absl::Span<const Role> roles,
                         absl::string_view service) {
  if (p.insecure_dev) return absl::OkStatus();
  for (Role r : roles) {
    if (p.role == r) return absl::OkStatus();
  }
  return absl::UnauthenticatedError(absl::StrCat("token ", p.name, " (", RoleName(p.role),
                                                 ") is not a credential for ", service));
}

absl::Status PermissionDenied(const Principal& p, absl::string_view what, absl::string_view need) {
  std::string scope;
  if (!p.all_apps &&
      (p.role == Role::kOperator || p.role == Role::kViewer || p.role == Role::kExecutor)) {
    scope =
        p.apps.empty() ? " for no app" : absl::StrCat(" for apps ", absl::StrJoin(p.apps, ", "));
  }
  return absl::PermissionDeniedError(
      absl::StrCat(what, ": needs ", need, "; token ", p.name, " is ", RoleName(p.role), scope));
}

absl::StatusOr<std::string> GenerateTokenSecret() {
  unsigned char bytes[kSecretBytes];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return absl::InternalError("token secret: the OpenSSL random generator failed");
  }
  return absl::StrCat(kTokenSecretPrefix, Hex(bytes, sizeof(bytes)));
}

bool LooksLikeTokenSecret(absl::string_view token) {
  if (!absl::StartsWith(token, kTokenSecretPrefix)) return false;
  token.remove_prefix(kTokenSecretPrefix.size());
  if (token.size() != 2 * kSecretBytes) return false;
  for (char c : token) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string HashTokenSecret(absl::string_view secret) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest with SHA-256 cannot fail for in-memory input short of memory exhaustion.
  if (EVP_Digest(secret.data(), secret.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    return std::string();
  }
  return Hex(digest, len);
}

absl::optional<std::string> AuthorizationHeader(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  return MetadataValue(metadata, "authorization");
}

ForwardedClient ReadForwardedClient(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  ForwardedClient f;
  f.proxy_authorization = MetadataValue(metadata, kProxyAuthorizationMetadata);
  f.client = MetadataValue(metadata, kForwardedClientMetadata).value_or(std::string());
  return f;
}

std::string TokenAuthenticator::LimitKey(const ForwardedClient& forwarded, absl::string_view peer) {
  if (forwarded.client.empty() || !forwarded.proxy_authorization.has_value() ||
      !IsIpAddress(forwarded.client)) {
    return std::string(peer);
  }
  if (!Authenticate(forwarded.proxy_authorization, peer).ok()) return std::string(peer);
  return absl::StrCat(forwarded.client, " via ", peer);
}

TokenAuthenticator::TokenAuthenticator(Options options, TokenLookup* lookup, const Clock& clock)
    : options_(std::move(options)),
      lookup_(lookup),
      clock_(clock),
      limiter_(options_.failed_auth, clock),
      refusal_log_(LogRateLimiter::Options(), clock),
      cache_(options_.max_cache_entries),
      negative_cache_(options_.max_negative_cache_entries) {}

TokenAuthenticator::Stats TokenAuthenticator::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void TokenAuthenticator::LogRefusal(absl::string_view peer, const absl::Status& status) {
  const LogRateLimiter::Verdict v = refusal_log_.Admit(peer);
  if (!v.log) return;
  spdlog::warn("authentication refused from {}: {}{}", LogText(peer.empty() ? "(local)" : peer),
               LogText(status.message()), LogRateLimiter::SuppressedNote(v.suppressed));
}

absl::Status TokenAuthenticator::RateLimited(absl::string_view peer) {
  {
    absl::MutexLock lock(&mu_);
    ++stats_.rate_limited;
  }
  absl::Status status = absl::ResourceExhaustedError(absl::StrCat(
      "too many failed authentications from ", peer, "; retry later with a valid token"));
  LogRefusal(peer, status);
  return status;
}

absl::Status TokenAuthenticator::Fail(absl::string_view peer, absl::Status status) {
  if (!limiter_.Allowed(peer)) return RateLimited(peer);
  limiter_.RecordFailure(peer);
  LogRefusal(peer, status);
  absl::MutexLock lock(&mu_);
  ++stats_.failures;
  return status;
}

absl::StatusOr<Principal> TokenAuthenticator::Authenticate(
    const absl::optional<std::string>& authorization, absl::string_view peer) {
  if (options_.insecure_dev) {
    Principal p = BootstrapPrincipal(Role::kAdmin, "insecure-dev");
    p.insecure_dev = true;
    return p;
  }
  if (!authorization.has_value()) {
    return Fail(peer, absl::UnauthenticatedError("missing authorization metadata (Bearer token)"));
  }
  absl::StatusOr<absl::string_view> token = BearerToken(*authorization);
  if (!token.ok()) return Fail(peer, token.status());
  return AuthenticateToken(*token, peer);
}

absl::StatusOr<Principal> TokenAuthenticator::AuthenticateToken(absl::string_view token,
                                                                absl::string_view peer) {
  if (options_.insecure_dev) return Authenticate(absl::nullopt);
  // Every bootstrap token is compared, whatever matched, so timing tells nothing.
  bool admin = false, executor = false;
  if (!options_.admin_token.empty()) admin = ConstantTimeEquals(token, options_.admin_token);
  if (!options_.executor_token.empty()) {
    executor = ConstantTimeEquals(token, options_.executor_token);
  }
  if (admin) return BootstrapPrincipal(Role::kAdmin, "bootstrap-admin");
  if (executor) return BootstrapPrincipal(Role::kExecutor, "bootstrap-executor");

  // Anything not shaped like an API token never reaches the database.
  if (lookup_ == nullptr || !LooksLikeTokenSecret(token)) {
    return Fail(peer, absl::UnauthenticatedError("invalid token"));
  }
  absl::StatusOr<absl::optional<StoredToken>> found = Lookup(HashTokenSecret(token), peer);
  if (!found.ok()) {
    if (absl::IsResourceExhausted(found.status())) return found.status();
    // The store refused the token itself (e.g. its stored role is unknown): a failure.
    if (absl::IsUnauthenticated(found.status())) return Fail(peer, found.status());
    return absl::UnavailableError(
        absl::StrCat("cannot check the token now: ", found.status().message()));
  }
  if (!found->has_value()) {
    return Fail(peer, absl::UnauthenticatedError("invalid or revoked token"));
  }
  const StoredToken& t = **found;
  if (t.expire_time.has_value() && *t.expire_time <= clock_.Now()) {
    return Fail(peer, absl::UnauthenticatedError(absl::StrCat("token ", t.name, " expired")));
  }
  Principal p;
  p.role = t.role;
  p.apps = t.apps;
  // "*" means every app, for the roles that may hold it; an empty list means no app.
  p.all_apps = t.role == Role::kAdmin || ((t.role == Role::kViewer || t.role == Role::kOperator) &&
                                          Contains(t.apps, kAllApps));
  p.token_id = t.id;
  p.name = t.name;
  return p;
}

absl::StatusOr<absl::optional<StoredToken>> TokenAuthenticator::Lookup(const std::string& hash,
                                                                       absl::string_view peer) {
  const absl::Time now = clock_.Now();
  bool seen_valid = false;
  {
    absl::MutexLock lock(&mu_);
    CacheEntry* valid = cache_.Find(hash);
    if (valid != nullptr && now - valid->fetched < options_.cache_ttl) return valid->token;
    seen_valid = valid != nullptr;
    if (!seen_valid) {
      // Never seen valid: junk until the database says otherwise.
      absl::Time* unknown = negative_cache_.Find(hash);
      if (unknown != nullptr && now - *unknown < options_.negative_cache_ttl) {
        ++stats_.negative_hits;
        return absl::optional<StoredToken>();
      }
    }
  }
  // A token seen valid is refreshed even for a peer over its limit.
  if (!seen_valid && !limiter_.Allowed(peer)) return RateLimited(peer);
  {
    absl::MutexLock lock(&mu_);
    ++stats_.lookups;
  }
  absl::StatusOr<absl::optional<StoredToken>> found = lookup_->FindActive(hash);
  if (!found.ok()) return found.status();
  {
    absl::MutexLock lock(&mu_);
    // Both bounded: junk fills only the negative cache and cannot evict valid tokens.
    if (found->has_value()) {
      cache_.Put(hash, CacheEntry{*found, now});
      negative_cache_.Erase(hash);
    } else {
      cache_.Erase(hash);
      negative_cache_.Put(hash, now);
    }
  }
  return found;
}

}  // namespace jobwheel
