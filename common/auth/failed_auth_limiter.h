#ifndef JOBWHEEL_COMMON_AUTH_FAILED_AUTH_LIMITER_H_
#define JOBWHEEL_COMMON_AUTH_FAILED_AUTH_LIMITER_H_

#include <cstddef>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/lru_map.h"
#include "common/time/clock.h"

namespace jobwheel {

// Limits failed authentications per peer (client IP) with a token bucket: each peer may fail
// `burst` times at once and `per_second` times a second after that. A peer over its limit
// gets no more database lookups for tokens the server does not already know (the
// authenticator answers RESOURCE_EXHAUSTED from memory). At most `max_peers` peers are
// tracked (least recently seen forgotten first). Thread-safe.
class FailedAuthLimiter {
 public:
  struct Options {
    double burst = 20;
    double per_second = 5;
    size_t max_peers = 10000;
  };

  FailedAuthLimiter(Options options, const Clock& clock);

  // True when `peer` may still fail (has at least one token). An empty peer is never limited.
  bool Allowed(absl::string_view peer);
  // Spends one token of `peer` (never below zero).
  void RecordFailure(absl::string_view peer);

 private:
  struct Bucket {
    double tokens = 0;
    absl::Time updated;
  };
  // The peer's bucket refilled up to now. Requires mu_.
  Bucket& Refill(absl::string_view peer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  const Clock& clock_;
  absl::Mutex mu_;
  LruMap<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mu_);
};

// "ipv4:10.0.0.7" from gRPC's peer string "ipv4:10.0.0.7:53412" ("ipv6:[::1]" from
// "ipv6:[::1]:53412"): the client's address without its port. Other forms are kept whole.
std::string PeerHost(absl::string_view grpc_peer);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUTH_FAILED_AUTH_LIMITER_H_
