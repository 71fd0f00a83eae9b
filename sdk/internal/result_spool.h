#ifndef JOBWHEEL_SDK_INTERNAL_RESULT_SPOOL_H_
#define JOBWHEEL_SDK_INTERNAL_RESULT_SPOOL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "jobwheel/v1/dispatcher.pb.h"

namespace jobwheel::sdk {

// Durable store of run results not yet acknowledged by a dispatcher: an append-only journal
// in <dir>/journal-<n>.log segments. Append() writes the serialized RunResult (into the page
// cache: it survives the process being killed); Sync() makes everything appended so far
// durable (fdatasync); Put() is both. Callers that sync while a sync is running share the
// next one (group commit), so a busy executor pays one sync for many results instead of one
// per result. Remove() appends a tombstone without syncing: a tombstone lost in a crash only
// makes the result be sent again, and dispatchers ignore duplicates. Segments roll over at
// `max_segment_bytes` and are deleted, oldest first, once none of their results is live.
// LoadAll() at start reads everything back (a torn record at the end of the journal — a
// crash mid-append — is ignored; that Put never returned) and compacts the live results
// into a fresh segment. Result files of the earlier one-file-per-run format
// (<run_id>.result) are read and migrated; unreadable ones are renamed to *.bad.
// A result's result_key (its run's secret, see RunRequest.result_key) is kept with it, so a
// result resent after a restart still carries it: the directory is private (0700, files 0600).
// Records from before results carried a key load without one; the dispatcher then refuses them
// for runs that have a key (and the reporter drops them). Thread-safe.
class ResultSpool {
 public:
  explicit ResultSpool(std::string dir, size_t max_segment_bytes = 8 << 20);
  ~ResultSpool();
  ResultSpool(const ResultSpool&) = delete;
  ResultSpool& operator=(const ResultSpool&) = delete;

  // Creates the directory. Call once before anything else.
  absl::Status Init();
  absl::Status Put(const jobwheel::v1::RunResult& result);
  absl::Status Append(const jobwheel::v1::RunResult& result);
  absl::Status Sync();
  // Forgets the result of run_id (OK when absent).
  absl::Status Remove(int64_t run_id);
  // Every live result, in run id order.
  absl::StatusOr<std::vector<jobwheel::v1::RunResult>> LoadAll();

  const std::string& dir() const { return dir_; }
  // Journal segments on disk (tests).
  size_t segments() const;

 private:
  absl::Status AppendLocked(const std::string& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Returns once record number `record` of segment `segment` is on disk.
  absl::Status WaitSyncedLocked(uint64_t segment, uint64_t record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status OpenSegmentLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropDeadSegmentsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads legacy files and every segment; fills `live` (run id → result). Sets *bad_segments
  // to segments with corruption before their end.
  absl::Status ReadAllLocked(std::map<int64_t, jobwheel::v1::RunResult>* live,
                             std::vector<std::string>* legacy_files,
                             std::vector<uint64_t>* bad_segments)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string SegmentPath(uint64_t seq) const;

  const std::string dir_;
  const size_t max_segment_bytes_;

  mutable absl::Mutex mu_;
  absl::CondVar synced_cv_;
  bool loaded_ ABSL_GUARDED_BY(mu_) = false;   // The first LoadAll compacted the journal.
  int fd_ ABSL_GUARDED_BY(mu_) = -1;           // Current segment, -1 before the first append.
  uint64_t segment_ ABSL_GUARDED_BY(mu_) = 0;  // Its number.
  size_t segment_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t appended_ ABSL_GUARDED_BY(mu_) = 0;  // Records appended to the current fd.
  uint64_t synced_ ABSL_GUARDED_BY(mu_) = 0;    // Of those, how many are on disk.
  bool syncing_ ABSL_GUARDED_BY(mu_) = false;
  // Live results: run id → segment holding its latest Put; live results per segment.
  absl::flat_hash_map<int64_t, uint64_t> where_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, int64_t> live_per_segment_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RESULT_SPOOL_H_
