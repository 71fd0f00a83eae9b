#ifndef JOBWHEEL_SDK_INTERNAL_EARLIER_RUN_LOGS_H_
#define JOBWHEEL_SDK_INTERNAL_EARLIER_RUN_LOGS_H_

#include <cstdint>

#include "absl/base/call_once.h"
#include "sdk/internal/run_log_store.h"

namespace jobwheel::sdk {

// Which run ids ran here but are no longer known in memory: those of earlier processes of this
// executor, and those this process's RunLedger forgot; both have a run log on disk. The largest
// id earlier processes logged is read once, at the first lookup (before this process logs a run
// of its own); ids above it and above the ledger's largest forgotten id are answered without
// touching the disk (they are known in memory: the RunManager's runs and its RunLedger), so a
// new run costs no disk lookup.
// Thread-safe.
class EarlierRunLogs {
 public:
  // `logs` may be null (no run logs: nothing ran here before).
  explicit EarlierRunLogs(RunLogStore* logs) : logs_(logs) {}
  EarlierRunLogs(const EarlierRunLogs&) = delete;
  EarlierRunLogs& operator=(const EarlierRunLogs&) = delete;

  // Whether a run log of `run_id` exists, looked up only for ids up to the larger of the
  // earlier processes' largest and `forgotten_up_to` (the largest id of this process that its
  // memory has forgotten, RunLedger::largest_forgotten): any larger id is known in memory.
  bool Logged(int64_t run_id, int64_t forgotten_up_to);

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
