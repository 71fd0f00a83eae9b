#ifndef JOBWHEEL_SDK_INTERNAL_TARGETS_H_
#define JOBWHEEL_SDK_INTERNAL_TARGETS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace jobwheel::sdk {

// True for a gRPC target with a resolver scheme ("dns:///h:1", "ipv4:a:1,b:2", "unix:/p").
bool HasScheme(absl::string_view target);

// The registry addresses to try in turn: a scheme target stays one entry; otherwise the
// comma list is split (blanks dropped).
std::vector<std::string> SplitRegistryTargets(absl::string_view target);

// The gRPC target for the dispatcher channel: a scheme target or a single address as is;
// a comma list of ip:port becomes "ipv4:a,b" (balanced by the channel's round robin).
std::string DispatcherChannelTarget(absl::string_view target);

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_TARGETS_H_
