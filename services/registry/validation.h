#ifndef JOBWHEEL_SERVICES_REGISTRY_VALIDATION_H_
#define JOBWHEEL_SERVICES_REGISTRY_VALIDATION_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "jobwheel/v1/registry.pb.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::registry {

// Input checks shared by the heartbeat and the app admin API. Each returns
// INVALID_ARGUMENT with a message naming the field (`field` is its path, e.g.
// "register.app").

// An app name: [A-Za-z0-9_.-]{1,64}.
absl::Status ValidateAppName(absl::string_view name, absl::string_view field);

// An executor address "host:port": host a DNS name, IPv4 address or [IPv6]
// literal made of [A-Za-z0-9_.-:] (no spaces, no '|'), port 1..65535.
absl::Status ValidateAddress(absl::string_view address, absl::string_view field);

// The first message of a heartbeat stream (instance_id: 16 to 64 of [A-Za-z0-9_.-]).
absl::Status ValidateRegistration(const v1::ExecutorRegistration& reg);

// An app for CreateApp/UpdateApp (output-only fields are ignored).
absl::Status ValidateApp(const v1::App& app);

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_VALIDATION_H_
