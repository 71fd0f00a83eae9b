#include "sdk/internal/earlier_run_logs.h"

#include <cstdint>

#include "absl/status/statusor.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {

int64_t EarlierRunLogs::DiskFloor() {
  absl::call_once(disk_floor_once_, [this] {
    absl::StatusOr<int64_t> max = logs_->MaxRunId();
    if (max.ok()) {
      disk_floor_ = *max;
    } else {
      // Unknown: every id is looked up on disk (slower, never wrong).
      spdlog::warn("run logs: cannot read the largest logged run id: {}", max.status().ToString());
      disk_floor_ = INT64_MAX;
    }
  });
  return disk_floor_;
}

bool EarlierRunLogs::Logged(int64_t run_id, int64_t forgotten_up_to) {
  if (logs_ == nullptr) return false;
  if (run_id > DiskFloor() && run_id > forgotten_up_to) return false;
  absl::StatusOr<RunLogStore::Page> page = logs_->Read(run_id, 1, 1);
  return page.ok() && !page->lines.empty();
}

}  // namespace jobwheel::sdk
