#include "common/server/readiness_flags.h"

#include "absl/flags/flag.h"
#include "absl/time/time.h"

ABSL_FLAG(absl::Duration, db_check_interval, absl::Seconds(5),
          "How often readiness checks the database (SELECT 1); not ready while it fails");
ABSL_FLAG(absl::Duration, db_check_timeout, absl::Seconds(2),
          "A readiness database check without an answer after this long counts as failed");
ABSL_FLAG(absl::Duration, drain_delay, absl::ZeroDuration(),
          "On SIGTERM: the least time health checks answer NOT_SERVING (calls are still "
          "served) before the server shuts down");

namespace jobwheel {

ReadinessOptions ReadinessOptionsFromFlags() {
  ReadinessOptions r;
  r.db_check_interval = absl::GetFlag(FLAGS_db_check_interval);
  r.db_check_timeout = absl::GetFlag(FLAGS_db_check_timeout);
  r.drain_delay = absl::GetFlag(FLAGS_drain_delay);
  return r;
}

}  // namespace jobwheel
