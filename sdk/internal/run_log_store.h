#ifndef JOBWHEEL_SDK_INTERNAL_RUN_LOG_STORE_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_LOG_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/time/clock.h"
#include "sdk/internal/run_log_reader.h"
#include "sdk/internal/run_log_writer.h"

namespace jobwheel::sdk {

// The run logs of one executor, in day folders <log_dir>/<yyyy-mm-dd>/ (the UTC day a run was
// accepted; a run's chunks all go to that folder, even after midnight). Each folder holds
// append-only segments shared by all runs (LogSegments: seg-<n>.log with the chunks,
// seg-<n>.idx with one record per chunk), so a run costs one append per flush, not a file.
// Per-run files <day>/<run_id>.log of earlier versions are still read (before the run's
// chunks). Files are opened relative to log_dir with O_NOFOLLOW, by names built from day
// strings, segment numbers and the int64 run id, so nothing outside log_dir is read or
// written. Logs may outlive the store (a stuck handler's thread): they then write each line
// at once. The writing side is RunLogWriter, the reading side RunLogReader; this is the one
// object the executor holds. Thread-safe.
class RunLogStore {
 public:
  using Page = RunLogPage;

  RunLogStore(std::string log_dir, Clock& clock, RunLogOptions options = {});
  RunLogStore(const RunLogStore&) = delete;
  RunLogStore& operator=(const RunLogStore&) = delete;

  // See RunLogWriter.
  absl::Status Init() { return writer_.Init(); }
  absl::StatusOr<std::shared_ptr<RunLogFile>> Create(int64_t run_id, bool* created = nullptr) {
    return writer_.Create(run_id, created);
  }
  void Remove(int64_t run_id) { writer_.Remove(run_id); }
  int Cleanup(int retention_days) { return writer_.Cleanup(retention_days); }
  int FlushDue() { return writer_.FlushDue(); }
  void FlushAll() { writer_.FlushAll(); }
  void Shutdown() { writer_.Shutdown(); }
  const std::string& dir() const { return writer_.dir(); }

  // See RunLogReader.
  absl::StatusOr<Page> Read(int64_t run_id, int from_line, int max_lines) {
    return reader_.Read(run_id, from_line, max_lines);
  }
  absl::StatusOr<int64_t> MaxRunId() { return reader_.MaxRunId(); }

 private:
  RunLogWriter writer_;  // Shut down (its flusher joined) when the store is destroyed.
  RunLogReader reader_;
};

inline RunLogStore::RunLogStore(std::string log_dir, Clock& clock, RunLogOptions options)
    : writer_(std::move(log_dir), std::make_shared<run_log_internal::State>(clock, options)),
      reader_(writer_.state()) {}

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_LOG_STORE_H_
