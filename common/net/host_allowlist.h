#ifndef JOBWHEEL_COMMON_NET_HOST_ALLOWLIST_H_
#define JOBWHEEL_COMMON_NET_HOST_ALLOWLIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace jobwheel::net {

// A list of hosts, each with any port or one port: "hooks.example.com, 10.0.0.7:8080,
// [fd00::1]:443". Hosts are kept and compared in canonical spelling (host_port.h), so
// "Hooks.Example.com." and "hooks.example.com" are one entry and an IP matches however it is
// written. Names are never resolved. Immutable after Parse; thread-safe.
class HostAllowlist {
 public:
  struct Entry {
    std::string host;  // Canonical.
    int port = 0;      // 0: any port.
  };

  HostAllowlist() = default;

  // A comma list of "host" or "host:port" (IPv6 bracketed when a port follows; whitespace
  // around entries ignored; empty: no entries). INVALID_ARGUMENT naming `flag` and the entry.
  static absl::StatusOr<HostAllowlist> Parse(absl::string_view text, absl::string_view flag);

  // Whether `host` (canonical spelling) at `port` is listed.
  bool Contains(absl::string_view host, int port) const;
  bool empty() const { return entries_.empty(); }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  explicit HostAllowlist(std::vector<Entry> entries) : entries_(std::move(entries)) {}

  std::vector<Entry> entries_;
};

}  // namespace jobwheel::net

#endif  // JOBWHEEL_COMMON_NET_HOST_ALLOWLIST_H_
