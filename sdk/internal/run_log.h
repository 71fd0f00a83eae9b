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
#include "common/time/clock.h"
#include "sdk/internal/log_segment.h"

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
  // A day folder's segment (see RunLogStore) is closed and the next one started once its
  // data file has reached this size.
  size_t segment_bytes = 64 * 1024 * 1024;
};

namespace run_log_internal {
struct State;
}  // namespace run_log_internal

// One run's log. Every line is prefixed with a UTC timestamp ("2026-01-02 03:04:05.678 ")
// taken at Append time and buffered in memory; the buffer goes to the current segment of the
// run's day folder as one chunk (one write(2), so readers never see half lines) when the run
// ends (Close), when it reaches RunLogOptions::flush_bytes, or flush_interval after its first
// unwritten line (the store's flusher). Nothing is written before the first flush, so a run
// that logs nothing before it is refused leaves no trace. Created by RunLogStore::Create.
// Thread-safe.
class RunLogFile : public std::enable_shared_from_this<RunLogFile> {
 public:
  ~RunLogFile();  // Writes what is still buffered.
  RunLogFile(const RunLogFile&) = delete;
  RunLogFile& operator=(const RunLogFile&) = delete;

  // Appends `text`; each '\n'-separated line becomes one timestamped log line.
  void Append(absl::string_view text);
  // Writes the buffered lines now.
  void Flush();
  // The run ended: writes the buffered lines. Lines appended later (a handler's stray thread)
  // are written at once, each as its own chunk.
  void Close();

  int64_t run_id() const { return run_id_; }
  // The day folder ("yyyy-mm-dd", UTC) of the day the log was created: all its chunks go there.
  const std::string& day() const { return day_; }

 private:
  friend class RunLogStore;
  RunLogFile(std::shared_ptr<run_log_internal::State> state, int64_t run_id, std::string day);

  // The buffered lines and the number of flushes so far (which changes whenever buffered
  // lines move to the file).
  std::string Buffered(uint64_t* flushes) const;
  uint64_t flushes() const;
  // Flushes if no flush happened since the flusher queued the log (at `flushes`). Returns
  // whether it wrote.
  bool FlushIfUnchanged(uint64_t flushes);
  // Drops the buffered lines, ignores later ones and discards the chunks this log wrote.
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

  const std::shared_ptr<run_log_internal::State> state_;
  const int64_t run_id_;
  const std::string day_;
  mutable absl::Mutex mu_;
  std::string buffer_ ABSL_GUARDED_BY(mu_);  // Whole timestamped lines, each ending in '\n'.
  uint64_t flushes_ ABSL_GUARDED_BY(mu_) = 0;
  bool wrote_ ABSL_GUARDED_BY(mu_) = false;    // first_chunk_ is set.
  LogChunk first_chunk_ ABSL_GUARDED_BY(mu_);  // Where a Discard's tombstone starts.
  bool direct_ ABSL_GUARDED_BY(mu_) = false;   // Closed: appends are written at once.
  bool discarded_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;  // Reported once.
  bool unregistered_ ABSL_GUARDED_BY(mu_) = false;  // No longer among the store's open logs.
};

// The run logs of one executor, in day folders <log_dir>/<yyyy-mm-dd>/ (the UTC day a run was
// accepted; a run's chunks all go to that folder, even after midnight). Each folder holds
// append-only segments shared by all runs (LogSegments: seg-<n>.log with the chunks,
// seg-<n>.idx with one record per chunk), so a run costs one append per flush, not a file.
// Per-run files <day>/<run_id>.log of earlier versions are still read (before the run's
// chunks). Files are opened relative to log_dir with O_NOFOLLOW, by names built from day
// strings, segment numbers and the int64 run id, so nothing outside log_dir is read or
// written. Owns the background flusher thread (started by Init, stopped by Shutdown or the
// destructor, which write everything still buffered). Logs may outlive the store (a stuck
// handler's thread): they then write each line at once. Thread-safe.
class RunLogStore {
 public:
  RunLogStore(std::string log_dir, const Clock& clock, RunLogOptions options = {});
  ~RunLogStore();  // Shutdown().
  RunLogStore(const RunLogStore&) = delete;
  RunLogStore& operator=(const RunLogStore&) = delete;

  // Creates log_dir, resolves its canonical path, opens it and starts the flusher. Call once
  // before anything else. Writes no file: a day's segment is made at its first chunk.
  absl::Status Init();

  // The log of `run_id`, in today's folder: the run's open log when it has one (*created =
  // false), else a new one (*created = true), written at its first flush (after any lines an
  // earlier process logged for the run). Does no I/O.
  absl::StatusOr<std::shared_ptr<RunLogFile>> Create(int64_t run_id, bool* created = nullptr);
  // Discards the open log of `run_id` (a run that was refused after all): its buffered lines
  // are dropped, and the chunks it already wrote are cancelled by a tombstone record (lines
  // of earlier processes stay).
  void Remove(int64_t run_id);

  struct Page {
    std::vector<std::string> lines;
    int from_line = 1;  // 1-based number of lines[0].
    int to_line = 0;    // Number of the last line returned; from_line - 1 when none.
    bool eof = false;   // The page reaches the current end of the log.
  };
  // Lines [from_line, from_line + max_lines) of run_id's log, at most ~1 MiB of text: the
  // lines on disk (an old per-run file, then the run's chunks in write order), then those of
  // an open log still buffered. A closed run is looked up in the day folder this process
  // wrote it to, else in every day folder, newest first.
  // INVALID_ARGUMENT for a non-positive run id, NOT_FOUND for a run without a log here,
  // PERMISSION_DENIED when its day folder or old per-run file is a symlink (which could lead
  // outside log_dir).
  absl::StatusOr<Page> Read(int64_t run_id, int from_line, int max_lines);

  // Deletes day folders (segments and old per-run files) older than `retention_days` days
  // before today (UTC). Returns how many folders were removed. retention_days <= 0 removes
  // nothing.
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
  // What one day folder holds of a run's log.
  struct OnDisk {
    UniqueFd day;     // The day folder; invalid when it does not exist.
    UniqueFd legacy;  // <run_id>.log of an earlier version, if there is one.
    std::vector<LogChunk> chunks;
    bool empty() const { return !legacy.valid() && chunks.empty(); }
  };

  // The open (not closed) log of run_id, if any.
  std::shared_ptr<RunLogFile> OpenLog(int64_t run_id);
  // What `day` holds of run_id's log. A day "folder" that is not a directory (a symlink) is
  // PERMISSION_DENIED, or looked past (empty) with skip_bad_day.
  absl::StatusOr<OnDisk> Look(int64_t run_id, const std::string& day, bool skip_bad_day = false);
  // What is on disk of a closed run's log, or NOT_FOUND.
  absl::StatusOr<OnDisk> Find(int64_t run_id);
  // Pages through the lines on `disk`, then `buffered` ones (null for a log that is not open).
  Page ReadPage(OnDisk& disk, const std::string* buffered, int from_line, int max_lines);
  void FlusherLoop();

  const std::string dir_;
  const Clock& clock_;
  const std::shared_ptr<run_log_internal::State> state_;
  std::string canonical_dir_;  // Set by Init().
  std::thread flusher_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_LOG_H_
