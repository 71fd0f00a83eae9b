#ifndef JOBWHEEL_SERVICES_HTTP_EXECUTOR_RESOLVER_H_
#define JOBWHEEL_SERVICES_HTTP_EXECUTOR_RESOLVER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/net/ip_address.h"

namespace jobwheel::http_executor {

// Turns a host name into the addresses it stands for (the seam for DNS; tests fake it).
// Implementations are thread-safe.
class Resolver {
 public:
  virtual ~Resolver() = default;
  // Every address of `host` (no duplicates); UNAVAILABLE or NOT_FOUND naming the host.
  virtual absl::StatusOr<std::vector<net::IpAddress>> Resolve(const std::string& host) = 0;
};

// getaddrinfo (TCP, IPv4 and IPv6). Blocks the calling thread for the system resolver's
// timeouts at most.
class SystemResolver : public Resolver {
 public:
  absl::StatusOr<std::vector<net::IpAddress>> Resolve(const std::string& host) override;
};

}  // namespace jobwheel::http_executor

#endif  // JOBWHEEL_SERVICES_HTTP_EXECUTOR_RESOLVER_H_
