#include "common/base/mutex_mode.h"

#include "absl/synchronization/mutex.h"

namespace jobwheel {

void DisableMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace jobwheel
