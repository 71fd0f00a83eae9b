#ifndef JOBWHEEL_COMMON_SERVER_SERVER_MAIN_H_
#define JOBWHEEL_COMMON_SERVER_SERVER_MAIN_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"

namespace jobwheel {

// What every server's main does the same way, so each main.cc only parses flags and wires.

// Connects once to `dsn` and brings the schema to the latest version (idempotent; replicas
// starting together serialise on the migration lock).
absl::Status ConnectAndMigrate(const std::string& dsn);

// A Prometheus /metrics endpoint on `address` serving `registry`; nullptr when `address` is
// empty (metrics off). INVALID_ARGUMENT naming --metrics_address when it cannot listen.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartMetricsExposer(
    const std::string& address, std::shared_ptr<prometheus::Registry> registry);

// `flag_value` when set, else "<hostname>-<pid>": an id unique among the replicas of a service.
std::string ReplicaIdOr(const std::string& flag_value);

// Logs `status` as critical and returns `exit_code`, for `return Fail(...)` in a main.
int Fail(const absl::Status& status, int exit_code = 1);
// The same with `context` (e.g. the flag at fault) put before the status's message.
int Fail(absl::string_view context, const absl::Status& status, int exit_code = 1);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_SERVER_SERVER_MAIN_H_
