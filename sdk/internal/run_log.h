#ifndef JOBWHEEL_SDK_INTERNAL_RUN_LOG_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_LOG_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"

namespace jobwheel::sdk {

// One run's log file, opened for appending. Every line is prefixed with a UTC timestamp
// ("2026-01-02 03:04:05.678 "), written with one write(2) so readers never see half lines.
// Thread-safe.
class RunLogFile {
 public:
  // Opens `path` for appending, creating it if needed; *created (when given) tells whether
  // this call created it.
  static absl::StatusOr<std::shared_ptr<RunLogFile>> Open(const std::string& path,
                                                          const Clock& clock,
                                                          bool* created = nullptr);
  ~RunLogFile();
  RunLogFile(const RunLogFile&) = delete;
  RunLogFile& operator=(const RunLogFile&) = delete;

  // Appends `text`; each '\n'-separated line becomes one timestamped log line.
  void Append(absl::string_view text);
  const std::string& path() const { return path_; }

 private:
  RunLogFile(std::string path, int fd, const Clock& clock)
      : path_(std::move(path)), fd_(fd), clock_(clock) {}

  const std::string path_;
  absl::Mutex mu_;
  const int fd_;
  const Clock& clock_;
};

// The run logs of one executor: <log_dir>/<yyyy-mm-dd>/<run_id>.log, the date being the
// (UTC) day the run was accepted. Paths are always built from the int64 run id and are
// checked to resolve inside log_dir. Thread-safe.
class RunLogStore {
 public:
  RunLogStore(std::string log_dir, const Clock& clock);

  // Creates log_dir and resolves its canonical path. Call once before anything else.
  absl::Status Init();

  // Creates (or reopens for appending) the log of `run_id` in today's folder; *created (when
  // given) tells whether this call created the file.
  absl::StatusOr<std::shared_ptr<RunLogFile>> Create(int64_t run_id, bool* created = nullptr);
  // Deletes the log this process created for `run_id` (a run that was refused after all).
  void Remove(int64_t run_id);

  struct Page {
    std::vector<std::string> lines;
    int from_line = 1;  // 1-based number of lines[0].
    int to_line = 0;    // Number of the last line returned; from_line - 1 when none.
    bool eof = false;   // The page reaches the current end of the file.
  };
  // Lines [from_line, from_line + max_lines) of run_id's log, at most ~1 MiB of text.
  // INVALID_ARGUMENT for a non-positive run id, NOT_FOUND for a run without a log here,
  // PERMISSION_DENIED when the file resolves outside log_dir (e.g. a planted symlink).
  absl::StatusOr<Page> Read(int64_t run_id, int from_line, int max_lines);

  // Deletes day folders older than `retention_days` days before today (UTC). Returns how many
  // folders were removed. retention_days <= 0 removes nothing.
  int Cleanup(int retention_days);

  const std::string& dir() const { return dir_; }

 private:
  // The existing log file of run_id, or NOT_FOUND.
  absl::StatusOr<std::string> Find(int64_t run_id);
  absl::Status CheckInside(const std::string& path) const;

  const std::string dir_;
  const Clock& clock_;
  std::string canonical_dir_;  // Set by Init().
  absl::Mutex mu_;
  // Runs whose log this process created, run id → day folder name: the most recent
  // kRememberedDays of them (older ones are found by looking through the day folders).
  static constexpr size_t kRememberedDays = 100000;
  absl::flat_hash_map<int64_t, std::string> days_ ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> days_order_ ABSL_GUARDED_BY(mu_);
  // The day folder known to exist (created once per day, not once per run).
  std::string made_day_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_LOG_H_
