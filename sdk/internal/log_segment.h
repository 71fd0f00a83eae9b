#ifndef JOBWHEEL_SDK_INTERNAL_LOG_SEGMENT_H_
#define JOBWHEEL_SDK_INTERNAL_LOG_SEGMENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "sdk/internal/file_io.h"

namespace jobwheel::sdk {

// Where one chunk of a run's log lies: bytes [offset, offset + length) of seg-<segment>.log.
struct LogChunk {
  uint32_t segment = 0;
  int64_t offset = 0;
  int64_t length = 0;
};

// One record of a segment index (seg-<n>.idx), 32 bytes, all little-endian:
//   0  int64   run_id   > 0
//   8  int64   offset   chunk: its offset in seg-<n>.log; tombstone: the first discarded chunk's
//  16  int64   length   chunk: > 0; tombstone: -1
//  24  uint32  segment  chunk: 0; tombstone: the segment of the first discarded chunk
//  28  uint32  check    FNV-1a of bytes 0..27 (tells torn or garbage records)
// A tombstone discards the run's chunks at (segment, offset) and later in its day folder (the
// chunks of one refused log; lines of earlier processes stay).
struct IndexRecord {
  int64_t run_id = 0;
  int64_t offset = 0;
  int64_t length = 0;
  uint32_t segment = 0;

  static constexpr size_t kSize = 32;
  static constexpr int64_t kTombstone = -1;
  bool tombstone() const { return length == kTombstone; }
};
std::string EncodeIndexRecord(const IndexRecord& record);
// False for a record that is torn, garbage or not a chunk/tombstone.
bool DecodeIndexRecord(absl::string_view bytes, IndexRecord* record);

// The file names of segment `n`.
std::string SegmentDataName(uint32_t n);
std::string SegmentIndexName(uint32_t n);
// Whether `name` is "yyyy-mm-dd" (digits and dashes only: safe as a path component).
bool IsDayName(absl::string_view name);

// The append-only segment files of the day folders under one log directory:
// <dir>/<day>/seg-<n>.log holds chunks (the whole lines of one flush of one run) back to back;
// seg-<n>.idx holds one IndexRecord per chunk, written after the chunk. A process only
// appends to segments it created (O_CREAT|O_EXCL on the next free number, in each day folder
// it writes to), and starts a new one when its data file reaches `segment_bytes`, so
// restarts and other processes never append to the same files. Nothing is fsync'd.
//
// Everything is opened relative to the directory's descriptor, day folders and files with
// O_NOFOLLOW: a planted symlink never leads out of the directory (reads report it as
// PERMISSION_DENIED, writes skip to the next segment number).
//
// Per segment the lowest and highest run id it holds are kept (from memory for segments this
// process writes, else read from the index once and extended as it grows), so looking a run
// up skips segments that cannot hold it, and reads only its chunks of the data files.
// Thread-safe.
class LogSegments {
 public:
  // `dir` must exist (the caller resolved it to its canonical path).
  static absl::StatusOr<std::unique_ptr<LogSegments>> Open(const std::string& dir,
                                                           size_t segment_bytes);
  LogSegments(const LogSegments&) = delete;
  LogSegments& operator=(const LogSegments&) = delete;

  // Appends `lines` (non-empty) as one chunk of run_id's log in the day folder `day` (made if
  // needed), then its index record. Returns where the chunk went.
  absl::StatusOr<LogChunk> Append(absl::string_view day, int64_t run_id, absl::string_view lines);
  // Appends a tombstone: run_id's chunks in `day` from `first` on no longer count.
  absl::Status Discard(absl::string_view day, int64_t run_id, const LogChunk& first);

  // Opens the day folder for reading: NOT_FOUND if it does not exist, PERMISSION_DENIED if it
  // is not a directory (e.g. a symlink).
  absl::StatusOr<UniqueFd> OpenDay(absl::string_view day) const;
  // run_id's chunks in the day folder (opened by OpenDay), in the order they were written,
  // without discarded ones and records that point past their data file's end.
  absl::StatusOr<std::vector<LogChunk>> Chunks(int day_fd, absl::string_view day, int64_t run_id);
  // The largest run id with a chunk in the day folder (opened by OpenDay); 0 when none.
  absl::StatusOr<int64_t> MaxRunId(int day_fd, absl::string_view day);
  // Reads a chunk's bytes. Keeps the last segment's data file open for the next chunk.
  class ChunkReader {
   public:
    ChunkReader(LogSegments* segments, int day_fd) : segments_(segments), day_fd_(day_fd) {}
    absl::StatusOr<std::string> Read(const LogChunk& chunk);

   private:
    LogSegments* const segments_;
    const int day_fd_;
    uint32_t segment_ = 0;
    UniqueFd fd_;
  };

  // The day folder was removed: closes its segment and forgets what was known of it.
  void DropDay(absl::string_view day);

  // Bytes read from index and data files so far (tests check that lookups skip segments).
  struct Stats {
    uint64_t index_bytes_read = 0;
    uint64_t data_bytes_read = 0;
  };
  Stats stats() const;

 private:
  // A segment this process appends to.
  struct Writer {
    uint32_t n = 0;
    std::string data_name, index_name;  // "<day>/seg-<n>.log|idx", for error messages.
    UniqueFd data;
    UniqueFd index;
    int64_t data_bytes = 0;
    int64_t index_bytes = 0;
    uint64_t last_used = 0;
  };
  // What is known of one segment's index.
  struct Info {
    bool own = false;         // Written by this process: index_bytes is exact.
    int64_t index_bytes = 0;  // Whole records accounted for in min/max.
    int64_t min_run = INT64_MAX;
    int64_t max_run = INT64_MIN;
  };

  LogSegments(UniqueFd dir_fd, size_t segment_bytes);

  absl::StatusOr<Writer*> WriterFor(absl::string_view day) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Creates the next free segment of `day`, trying numbers from `next` on (0: past the
  // highest in the folder).
  absl::StatusOr<Writer> CreateSegment(absl::string_view day, uint64_t next);
  absl::Status AppendRecord(absl::string_view day, Writer* w, const IndexRecord& record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void ForgetDay(absl::string_view day);
  // Brings the cached Info of segment n up to date (reading the index's new records) and
  // returns it.
  Info Refresh(int day_fd, absl::string_view day, uint32_t n);
  // Reads index bytes [from, to) of segment n: whole records.
  absl::StatusOr<std::string> ReadIndex(int day_fd, uint32_t n, int64_t from, int64_t to);

  const UniqueFd dir_fd_;
  const int64_t segment_bytes_;

  absl::Mutex write_mu_;  // Serializes appends, so each knows its offsets.
  std::map<std::string, Writer, std::less<>> writers_ ABSL_GUARDED_BY(write_mu_);  // By day.
  uint64_t uses_ ABSL_GUARDED_BY(write_mu_) = 0;

  mutable absl::Mutex info_mu_;  // After write_mu_ when both are held.
  // Day → segment number → Info.
  absl::flat_hash_map<std::string, absl::flat_hash_map<uint32_t, Info>> info_
      ABSL_GUARDED_BY(info_mu_);
  Stats stats_ ABSL_GUARDED_BY(info_mu_);
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_LOG_SEGMENT_H_
