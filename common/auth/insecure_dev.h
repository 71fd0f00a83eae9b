#ifndef JOBWHEEL_COMMON_AUTH_INSECURE_DEV_H_
#define JOBWHEEL_COMMON_AUTH_INSECURE_DEV_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace jobwheel {

// Whether a gRPC listen address can only be reached from this host: an IPv4 address in
// 127.0.0.0/8, ::1 (or ::ffff:127.x.y.z), `localhost`, or a `unix:`/`unix-abstract:` socket.
// A wildcard (0.0.0.0, [::], an empty host), any other address and any other host name
// (it may resolve to anything) is not.
bool IsLoopbackListenAddress(absl::string_view address);

// --insecure_dev turns every authentication check off, so a service may use it only where
// no other host can call it. OkStatus when `insecure_dev` is false or `listen` is loopback;
// otherwise INVALID_ARGUMENT naming both flags (the caller refuses to start).
absl::Status CheckInsecureDevListen(bool insecure_dev, absl::string_view listen,
                                    absl::string_view listen_flag = "--listen");

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUTH_INSECURE_DEV_H_
