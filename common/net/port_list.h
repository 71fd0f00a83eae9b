#ifndef JOBWHEEL_COMMON_NET_PORT_LIST_H_
#define JOBWHEEL_COMMON_NET_PORT_LIST_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace jobwheel::net {

// A set of TCP ports: "80,443,8000-8099", or "*" for every port. Immutable after Parse;
// thread-safe.
class PortList {
 public:
  // No port.
  PortList() = default;

  // A comma list of ports and lo-hi ranges (1..65535), or "*"; empty: no port.
  // INVALID_ARGUMENT naming `flag` and the entry.
  static absl::StatusOr<PortList> Parse(absl::string_view text, absl::string_view flag);

  bool Contains(int port) const;
  bool any() const { return any_; }
  // "*", or the list as "80,443,8000-8099".
  std::string ToString() const;

 private:
  bool any_ = false;
  std::vector<std::pair<int, int>> ranges_;
};

}  // namespace jobwheel::net

#endif  // JOBWHEEL_COMMON_NET_PORT_LIST_H_
