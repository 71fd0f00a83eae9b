#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_RUN_JOURNAL_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_RUN_JOURNAL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "jobwheel/xxl/gateway_state.pb.h"

namespace jobwheel::xxl {

// The gateway's run records on disk: one append-only file of frames (length, CRC-32, a
// serialized RunRecord); on Open the last frame of a run id wins and a `forgotten` one drops
// it. A frame torn by a crash ends the file: it and anything after it are cut off.
//
// Append is one write(2) (durable through a crash of the process) and returns the frame's
// sequence number; SyncTo makes every frame up to one durable through a machine crash. The
// callers waiting in SyncTo at once share one fdatasync (group commit): while one sync runs,
// the frames appended meanwhile wait for the next, which covers all of them. Compact rewrites
// the file with the live records only (written to a temporary file, synced, renamed over the
// old one). An empty `path` keeps nothing (tests). Thread-safe.
class RunJournal {
 public:
  explicit RunJournal(std::string path) : path_(std::move(path)) {}
  ~RunJournal();
  RunJournal(const RunJournal&) = delete;
  RunJournal& operator=(const RunJournal&) = delete;

  // Opens the file (0600, created when missing) and returns its live records.
  absl::StatusOr<std::vector<RunRecord>> Open();
  // Appends `record`; its sequence number (0 when nothing is kept).
  absl::StatusOr<uint64_t> Append(const RunRecord& record);
  // Appends that `run_id` is forgotten.
  absl::StatusOr<uint64_t> Forget(int64_t run_id);
  // Returns once the frames up to `seq` are synced.
  absl::Status SyncTo(uint64_t seq);
  // Rewrites the file with the records `live` returns (called with appends held back, so
  // none is lost between the snapshot and the rename).
  absl::Status Compact(const std::function<std::vector<RunRecord>()>& live);
  // Bytes in the file now.
  uint64_t bytes() const;
  // fdatasync calls so far (tests: that syncs are shared).
  uint64_t syncs() const;

 private:
  absl::StatusOr<uint64_t> AppendFrame(const RunRecord& record);
  // Writes `bytes` at the end; on a short write cuts the file back. Requires mu_.
  absl::Status WriteLocked(const std::string& bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  mutable absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t size_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t appended_ ABSL_GUARDED_BY(mu_) = 0;  // Sequence number of the last frame.
  uint64_t synced_ ABSL_GUARDED_BY(mu_) = 0;    // Frames up to this one are synced.
  bool syncing_ ABSL_GUARDED_BY(mu_) = false;   // A caller is in fdatasync (mu_ released).
  uint64_t syncs_ ABSL_GUARDED_BY(mu_) = 0;
};

// The frame of `record` (exposed for tests that tear one).
std::string JournalFrame(const RunRecord& record);

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_RUN_JOURNAL_H_
