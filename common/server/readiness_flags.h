#ifndef JOBWHEEL_COMMON_SERVER_READINESS_FLAGS_H_
#define JOBWHEEL_COMMON_SERVER_READINESS_FLAGS_H_

#include "common/server/readiness.h"

namespace jobwheel {

// The readiness flags of the servers with a database (scheduler, registry, dispatcher), defined
// once here: --db_check_interval, --db_check_timeout, --drain_delay. A binary that links this
// takes the three flags; validate the result with ReadinessOptions::Validate().
ReadinessOptions ReadinessOptionsFromFlags();

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_SERVER_READINESS_FLAGS_H_
