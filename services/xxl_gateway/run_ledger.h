#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_RUN_LEDGER_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_RUN_LEDGER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "jobwheel/xxl/gateway_state.pb.h"
#include "services/xxl_gateway/state_dir.h"

namespace jobwheel::xxl {

// Every run id the gateway knows (given to one of its identities, or fenced), kept in memory
// and in the StateDir: the gateway's run-once ledger. A run id is recorded before it is sent
// to an XXL executor, so it is sent at most once, across restarts too. Thread-safe.
class RunLedger {
 public:
  explicit RunLedger(StateDir& state) : state_(state) {}

  // Loads the records of an earlier process.
  absl::Status Load();
  std::optional<RunRecord> Get(int64_t run_id) const;
  // Stores (and persists) `record`; the in-memory copy changes even when the write fails.
  absl::Status Put(const RunRecord& record);
  // Records of `identity`.
  std::vector<RunRecord> OfIdentity(const std::string& identity) const;
  // Ended, refused or fenced records whose end (or acceptance) is older than `before` and
  // that need nothing more (reported): forgotten, in memory and on disk.
  int Prune(absl::Time before);
  size_t size() const;

 private:
  StateDir& state_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int64_t, RunRecord> runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_RUN_LEDGER_H_
