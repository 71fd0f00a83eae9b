#ifndef JOBWHEEL_SDK_INTERNAL_RUN_LOG_READER_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_LOG_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sdk/internal/file_io.h"
#include "sdk/internal/log_segment.h"
#include "sdk/internal/run_log_writer.h"

namespace jobwheel::sdk {

// A page of a run's log.
struct RunLogPage {
  std::vector<std::string> lines;
  int from_line = 1;  // 1-based number of lines[0].
  int to_line = 0;    // Number of the last line returned; from_line - 1 when none.
  bool eof = false;   // The page reaches the current end of the log.
};

// The reading side of the run logs under one directory (see RunLogStore for the layout):
// pages through a run's lines on disk, then those its open log still buffers. Files are
// opened relative to the log directory with O_NOFOLLOW. Thread-safe.
class RunLogReader {
 public:
  explicit RunLogReader(std::shared_ptr<run_log_internal::State> state);

  // Lines [from_line, from_line + max_lines) of run_id's log, at most ~1 MiB of text: the
  // lines on disk (an old per-run file, then the run's chunks in write order), then those of
  // an open log still buffered. A closed run is looked up in the day folder this process
  // wrote it to, else in every day folder, newest first.
  // INVALID_ARGUMENT for a non-positive run id, NOT_FOUND for a run without a log here,
  // PERMISSION_DENIED when its day folder or old per-run file is a symlink (which could lead
  // outside log_dir).
  absl::StatusOr<RunLogPage> Read(int64_t run_id, int from_line, int max_lines);
  // The largest run id with a log on disk (segments and single-file logs of every day
  // folder); 0 when there is none. Reads each segment's index summary, not the logs.
  absl::StatusOr<int64_t> MaxRunId();

 private:
  // What one day folder holds of a run's log.
  struct OnDisk {
    UniqueFd day;     // The day folder; invalid when it does not exist.
    UniqueFd legacy;  // <run_id>.log of an earlier version, if there is one.
    std::vector<LogChunk> chunks;
    bool empty() const { return !legacy.valid() && chunks.empty(); }
  };

  // What `day` holds of run_id's log. A day "folder" that is not a directory (a symlink) is
  // PERMISSION_DENIED, or looked past (empty) with skip_bad_day.
  absl::StatusOr<OnDisk> Look(int64_t run_id, const std::string& day, bool skip_bad_day = false);
  // What is on disk of a closed run's log, or NOT_FOUND.
  absl::StatusOr<OnDisk> Find(int64_t run_id);
  // Pages through the lines on `disk`, then `buffered` ones (null for a log that is not open).
  RunLogPage ReadPage(OnDisk& disk, const std::string* buffered, int from_line, int max_lines);

  const std::shared_ptr<run_log_internal::State> state_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_LOG_READER_H_
