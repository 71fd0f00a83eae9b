#include "common/server/server_main.h"

#include <unistd.h>

#include <exception>

#include "absl/strings/str_cat.h"
#include "common/pg/migrations.h"
#include "common/pg/pg_pool.h"
#include "spdlog/spdlog.h"

namespace jobwheel {

absl::Status ConnectAndMigrate(const std::string& dsn) {
  auto conn = PgPool::Connect(dsn);
  if (!conn.ok()) return conn.status();
  return ApplyMigrations(**conn);
}

absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartMetricsExposer(
    const std::string& address, std::shared_ptr<prometheus::Registry> registry) {
  if (address.empty()) return std::unique_ptr<prometheus::Exposer>();
  try {
    auto exposer = std::make_unique<prometheus::Exposer>(address);
    exposer->RegisterCollectable(registry);
    return exposer;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics_address ", address, ": ", e.what()));
  }
}

std::string ReplicaIdOr(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat(host[0] != '\0' ? host : "replica", "-", getpid());
}

int Fail(const absl::Status& status, int exit_code) {
  spdlog::critical("{}", status.ToString());
  return exit_code;
}

int Fail(absl::string_view context, const absl::Status& status, int exit_code) {
  return Fail(absl::Status(status.code(), absl::StrCat(context, ": ", status.message())),
              exit_code);
}

}  // namespace jobwheel
