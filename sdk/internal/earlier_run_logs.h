#ifndef JOBWHEEL_SDK_INTERNAL_EARLIER_RUN_LOGS_H_
#define JOBWHEEL_SDK_INTERNAL_EARLIER_RUN_LOGS_H_

#include <cstdint>

#include "absl/base/call_once.h"
#include "sdk/internal/run_log_store.h"

namespace jobwheel::sdk {

// Which run ids earlier processes of this executor ran: those with a run log on disk. The
// largest logged run id is read once, at the first lookup (before this process logs a run of
// its own): a larger id never ran here before, so it is answered without touching the disk
// (runs of this process are known in memory: the RunManager's runs and its RunLedger).
// Thread-safe.
class EarlierRunLogs {
 public:
  // `logs` may be null (no run logs: nothing ran here before).
  explicit EarlierRunLogs(RunLogStore* logs) : logs_(logs) {}
  EarlierRunLogs(const EarlierRunLogs&) = delete;
  EarlierRunLogs& operator=(const EarlierRunLogs&) = delete;

  // Whether an earlier process left a run log of `run_id`.
  bool Logged(int64_t run_id);

 private:
  // The largest run id logged on disk by earlier processes (INT64_MAX when it cannot be read:
  // every id is then looked up, slower but never wrong).
  int64_t DiskFloor();

  RunLogStore* const logs_;
  absl::once_flag disk_floor_once_;
  int64_t disk_floor_ = 0;  // Set once under disk_floor_once_.
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_EARLIER_RUN_LOGS_H_
