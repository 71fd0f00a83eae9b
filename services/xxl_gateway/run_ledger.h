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
#include "services/xxl_gateway/run_journal.h"
#include "services/xxl_gateway/state_dir.h"

namespace jobwheel::xxl {

// Every run id the gateway knows (given to one of its identities, or fenced), kept in memory
// and in the RunJournal of the StateDir (<state_dir>/runs.journal): the gateway's run-once
// ledger. A run id is recorded (synced) before it is sent to an XXL executor, so it is sent at
// most once, across restarts too. Each run's writes reach the journal in order (one writer per
// run at a time, always its latest record); the wait for the sync is outside every lock, so
// the runs persisted at once share one fdatasync. Thread-safe.
class RunLedger {
 public:
  // kSynced: durable through a machine crash before Put returns (what the gateway promised a
  // dispatcher: accepted, queued, fenced, discarded). kWritten: through a crash of the process
  // (results and their reporting: an XXL executor retries an unacknowledged callback).
  enum class Durability { kSynced, kWritten };

  explicit RunLedger(StateDir& state);

  // Loads the records of an earlier process.
  absl::Status Load();
  std::optional<RunRecord> Get(int64_t run_id) const;
  // Stage + Persist: stores `record`; the in-memory copy changes even when the write fails.
  absl::Status Put(const RunRecord& record, Durability durability);
  // Stores `record` in memory only; Persist writes it.
  void Stage(const RunRecord& record);
  // Writes the run's latest record (nothing when that one is on disk already as durable).
  absl::Status Persist(int64_t run_id, Durability durability);
  // Records of `identity`.
  std::vector<RunRecord> OfIdentity(const std::string& identity) const;
  // Ended, refused or fenced records whose end (or acceptance) is older than `before` and
  // that need nothing more (reported): forgotten, in memory and on disk; the journal is
  // compacted when most of it is records no longer live.
  int Prune(absl::Time before);
  size_t size() const;
  const RunJournal& journal() const { return journal_; }

 private:
  struct Entry {
    RunRecord record;
    uint64_t version = 0;  // Of `record`: one more per Stage.
    uint64_t written = 0;  // The version in the journal.
    uint64_t seq = 0;      // Its journal sequence number.
  };
  static constexpr int kWriteStripes = 64;

  RunJournal journal_;
  absl::Mutex write_mu_[kWriteStripes];  // Run id % kWriteStripes: one writer per run.
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int64_t, Entry> runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_RUN_LEDGER_H_
