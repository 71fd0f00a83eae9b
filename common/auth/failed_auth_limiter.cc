#include "common/auth/failed_auth_limiter.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace jobwheel {

FailedAuthLimiter::FailedAuthLimiter(Options options, const Clock& clock)
    : options_(options), clock_(clock), buckets_(options.max_peers) {}

FailedAuthLimiter::Bucket& FailedAuthLimiter::Refill(absl::string_view peer) {
  const absl::Time now = clock_.Now();
  const std::string key(peer);
  Bucket* b = buckets_.Find(key);
  if (b == nullptr) return buckets_.Put(key, Bucket{options_.burst, now});
  const double elapsed = std::max(0.0, absl::ToDoubleSeconds(now - b->updated));
  b->tokens = std::min(options_.burst, b->tokens + elapsed * options_.per_second);
  b->updated = now;
  return *b;
}

bool FailedAuthLimiter::Allowed(absl::string_view peer) {
  if (peer.empty()) return true;
  absl::MutexLock lock(&mu_);
  return Refill(peer).tokens >= 1;
}

void FailedAuthLimiter::RecordFailure(absl::string_view peer) {
  if (peer.empty()) return;
  absl::MutexLock lock(&mu_);
  Bucket& b = Refill(peer);
  b.tokens = std::max(0.0, b.tokens - 1);
}

std::string PeerHost(absl::string_view grpc_peer) {
  if (absl::StartsWith(grpc_peer, "ipv4:")) {
    const size_t colon = grpc_peer.rfind(':');
    if (colon > 4) return std::string(grpc_peer.substr(0, colon));
  }
  if (absl::StartsWith(grpc_peer, "ipv6:")) {
    const size_t bracket = grpc_peer.rfind(']');
    if (bracket != absl::string_view::npos) return std::string(grpc_peer.substr(0, bracket + 1));
    // gRPC 1.51 escapes the brackets: "ipv6:%5B::1%5D:53412". The same host must be one peer
    // whatever its port, or every new connection would start with a fresh allowance.
    const size_t open = grpc_peer.find("%5B");
    const size_t close = grpc_peer.rfind("%5D");
    if (open == 5 && close != absl::string_view::npos && close > open) {
      return absl::StrCat("ipv6:[", grpc_peer.substr(open + 3, close - open - 3), "]");
    }
  }
  return std::string(grpc_peer);
}

}  // namespace jobwheel
