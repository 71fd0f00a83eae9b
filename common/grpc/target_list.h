#ifndef JOBWHEEL_COMMON_GRPC_TARGET_LIST_H_
#define JOBWHEEL_COMMON_GRPC_TARGET_LIST_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace jobwheel {

// How every process reads a flag naming the replicas of a service: "host:port", a comma list
// "a:1,b:2", or a gRPC target with a resolver scheme ("dns:///name:port", "ipv4:a:1,b:2").

// True for a gRPC target with a resolver scheme ("dns:///h:1", "ipv4:a:1,b:2", "unix:/p").
bool HasScheme(absl::string_view target);

// The addresses to try in turn: a scheme target stays one entry; otherwise the comma list is
// split (blanks dropped).
std::vector<std::string> SplitTargets(absl::string_view target);

// The target of one channel balanced over all replicas: a scheme target or a single address
// as is; a comma list of ip:port becomes "ipv4:a,b" (the channel's round robin spreads calls).
std::string ChannelTarget(absl::string_view target);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_GRPC_TARGET_LIST_H_
