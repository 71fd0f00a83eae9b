#ifndef JOBWHEEL_SDK_INTERNAL_RUN_LOG_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_LOG_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace jobwheel::sdk {

struct RunLogOptions {
  // A log's lines reach the file at the latest this long after the first unwritten one (a
  // crashed process loses at most that much). <= 0: every Append is written at once.
  absl::Duration flush_interval = absl::Milliseconds(200);
  // ... and as soon as this many bytes are buffered.
  size_t flush_bytes = 64 * 1024;
  // Whether Init() starts the background flusher thread. Without it, logs are written when
  // they are closed, when their buffer is full, and by FlushDue()/FlushAll() (for tests).
  bool background_flush = true;
};

namespace run_log_internal {
struct State;
}  // namespace run_log_internal

// One run's log. Every line is prefixed with a UTC timestamp ("2026-01-02 03:04:05.678 ")
// taken at Append time and buffered in memory; the buffer goes to the file in one write(2)
// (so readers never see half lines) when the run ends (Close), when it reaches
// RunLogOptions::flush_bytes, or flush_interval after its first unwritten line (the store's
// flusher). The file is created at the first write, so a run that logs nothing before it is
// refused never creates one. Created by RunLogStore::Create. Thread-safe.
class RunLogFile : public std::enable_shared_from_this<RunLogFile> {
 public:
  ~RunLogFile();  // Writes what is still buffered.
  RunLogFile(const RunLogFile&) = delete;
  RunLogFile& operator=(const RunLogFile&) = delete;

  // Appends `text`; each '\n'-separated line becomes one timestamped log line.
  void Append(absl::string_view text);
  // Writes the buffered lines now (creating the file if needed).
  void Flush();
  // The run ended: writes the buffered lines and closes the file. Lines appended later (a
  // handler's stray thread) are written at once, each with its own write.
  void Close();

  const std::string& path() const { return path_; }
  int64_t run_id() const { return run_id_; }

 private:
  friend class RunLogStore;
  RunLogFile(std::shared_ptr<run_log_internal::State> state, int64_t run_id, std::string day,
             std::string path);

  // The buffered lines and the number of flushes so far (which changes whenever buffered
  // lines move to the file).
  std::string Buffered(uint64_t* flushes) const;
  uint64_t flushes() const;
  // Flushes if no flush happened since the flusher queued the log (at `flushes`). Returns
  // whether it wrote.
  bool FlushIfUnchanged(uint64_t flushes);
  // Drops the buffered lines, ignores later ones and deletes the file if this log created it.
  void Discard();
  // Calls fn(buffered lines) with the lock held, so no flush moves lines meanwhile.
  template <typename Fn>
  void WithBuffered(Fn fn) const {
    absl::MutexLock lock(&mu_);
    fn(static_cast<const std::string&>(buffer_));
  }
  // Writes the buffered lines and makes further appends write at once (the store shut down).
  void WriteThrough();

  bool FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool OpenLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseFdLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<run_log_internal::State> state_;
  const int64_t run_id_;
  const std::string day_;
  const std::string path_;
  mutable absl::Mutex mu_;
  std::string buffer_ ABSL_GUARDED_BY(mu_);  // Whole timestamped lines, each ending in '\n'.
  uint64_t flushes_ ABSL_GUARDED_BY(mu_) = 0;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool created_file_ ABSL_GUARDED_BY(mu_) = false;  // This log created path_.
  bool direct_ ABSL_GUARDED_BY(mu_) = false;        // Closed: appends are written at once.
  bool discarded_ ABSL_GUARDED_BY(mu_) = false;
  bool open_failed_ ABSL_GUARDED_BY(mu_) = false;   // Reported once.
  bool unregistered_ ABSL_GUARDED_BY(mu_) = false;  // No longer among the store's open logs.
};

// The run logs of one executor: <log_dir>/<yyyy-mm-dd>/<run_id>.log, the date being the
// (UTC) day the run was accepted. Paths are always built from the int64 run id and are
// checked to resolve inside log_dir. Owns the background flusher thread (started by Init,
// stopped by Shutdown or the destructor, which write everything still buffered). Logs may
// outlive the store (a stuck handler's thread): they then write each line at once.
// Thread-safe.
class RunLogStore {
 public:
  RunLogStore(std::string log_dir, const Clock& clock, RunLogOptions options = {});
  ~RunLogStore();  // Shutdown().
  RunLogStore(const RunLogStore&) = delete;
  RunLogStore& operator=(const RunLogStore&) = delete;

  // Creates log_dir, resolves its canonical path and starts the flusher. Call once before
  // anything else.
  absl::Status Init();

  // The log of `run_id`, in today's folder: the run's open log when it has one (*created =
  // false), else a new one (*created = true), whose file is made at its first write (and
  // appended to when it exists from an earlier process). Does no I/O.
  absl::StatusOr<std::shared_ptr<RunLogFile>> Create(int64_t run_id, bool* created = nullptr);
  // Discards the open log of `run_id` (a run that was refused after all): its buffered lines
  // are dropped and its file deleted if that log created it.
  void Remove(int64_t run_id);

  struct Page {
    std::vector<std::string> lines;
    int from_line = 1;  // 1-based number of lines[0].
    int to_line = 0;    // Number of the last line returned; from_line - 1 when none.
    bool eof = false;   // The page reaches the current end of the log.
  };
  // Lines [from_line, from_line + max_lines) of run_id's log, at most ~1 MiB of text: the
  // lines in the file, then those of an open log still buffered.
  // INVALID_ARGUMENT for a non-positive run id, NOT_FOUND for a run without a log here,
  // PERMISSION_DENIED when the file resolves outside log_dir (e.g. a planted symlink).
  absl::StatusOr<Page> Read(int64_t run_id, int from_line, int max_lines);

  // Deletes day folders older than `retention_days` days before today (UTC). Returns how many
  // folders were removed. retention_days <= 0 removes nothing.
  int Cleanup(int retention_days);

  // Writes the logs whose first unwritten line is flush_interval old or older; returns how
  // many were written. The flusher calls it; tests call it with a FakeClock.
  int FlushDue();
  // Writes every open log's buffered lines now.
  void FlushAll();
  // Stops the flusher and writes everything buffered; appends from then on are written at
  // once. Idempotent.
  void Shutdown();

  const std::string& dir() const { return dir_; }

 private:
  // The open (not closed) log of run_id, if any.
  std::shared_ptr<RunLogFile> OpenLog(int64_t run_id);
  // Reads run_id's lines from `path`, then `buffered` ones. `buffered` is null for a log that
  // is not open (then a missing file is NOT_FOUND).
  absl::StatusOr<Page> ReadPage(int64_t run_id, const std::string& path,
                                const std::string* buffered, int from_line, int max_lines);
  // The existing log file of run_id, or NOT_FOUND.
  absl::StatusOr<std::string> Find(int64_t run_id);
  absl::Status CheckInside(const std::string& path) const;
  void FlusherLoop();

  const std::string dir_;
  const Clock& clock_;
  const std::shared_ptr<run_log_internal::State> state_;
  std::string canonical_dir_;  // Set by Init().
  std::thread flusher_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_LOG_H_
