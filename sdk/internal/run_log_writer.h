#ifndef JOBWHEEL_SDK_INTERNAL_RUN_LOG_WRITER_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_LOG_WRITER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/civil_time.h"
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

class RunLogFile;

namespace run_log_internal {

// What the writer, the reader and the logs share (logs may outlive the others). Lock order: a
// log's mu_, then State::mu; never the reverse.
struct State {
  State(Clock& clock, RunLogOptions options) : clock(clock), options(options) {}

  // A log to flush at `due` unless it was flushed since it was queued (at `flushes`).
  struct Due {
    absl::Time due;
    std::weak_ptr<RunLogFile> log;
    uint64_t flushes = 0;
  };
  struct OpenLog {
    std::weak_ptr<RunLogFile> weak;
    const RunLogFile* raw = nullptr;  // To recognise the entry without locking `weak`.
  };

  // Queues a log whose buffer just got its first line. False once the store is shut down
  // (the caller then writes at once).
  bool Enqueue(std::weak_ptr<RunLogFile> log, absl::Time due_at, uint64_t flushes);
  // Remembers the day folder of a log this process wrote.
  void Remember(int64_t run_id, const std::string& day);
  void ForgetDay(int64_t run_id);
  // Removes `log` from the open logs (if it is still the one registered for run_id).
  void Unregister(int64_t run_id, const RunLogFile* log);
  // The open (not closed) log of run_id, if any.
  std::shared_ptr<RunLogFile> Open(int64_t run_id);

  Clock& clock;
  const RunLogOptions options;
  // Set by RunLogWriter::Init, before any log exists; logs write through it even after the
  // store is gone.
  std::unique_ptr<LogSegments> segments;
  std::string canonical_dir;  // Set by RunLogWriter::Init.
  absl::Mutex mu;
  std::deque<Due> due ABSL_GUARDED_BY(mu);
  bool stopped ABSL_GUARDED_BY(mu) = false;
  // Logs not closed yet (their lines may be buffered): for Read, FlushAll and Create.
  absl::flat_hash_map<int64_t, OpenLog> open ABSL_GUARDED_BY(mu);
  // Runs whose log this process wrote, run id → day folder name: the most recent
  // kRememberedDays of them (older ones are found by looking through the day folders).
  static constexpr size_t kRememberedDays = 100000;
  absl::flat_hash_map<int64_t, std::string> days ABSL_GUARDED_BY(mu);
  std::deque<int64_t> days_order ABSL_GUARDED_BY(mu);
};

// Whether `name` is a day folder's name ("yyyy-mm-dd"); sets *day.
bool ParseDayFolder(absl::string_view name, absl::CivilDay* day);

}  // namespace run_log_internal

// One run's log. Every line is prefixed with a UTC timestamp ("2026-01-02 03:04:05.678 ")
// taken at Append time and buffered in memory; the buffer goes to the current segment of the
// run's day folder as one chunk (one write(2), so readers never see half lines) when the run
// ends (Close), when it reaches RunLogOptions::flush_bytes, or flush_interval after its first
// unwritten line (the writer's flusher). Nothing is written before the first flush, so a run
// that logs nothing before it is refused leaves no trace. Created by RunLogWriter::Create.
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
  friend class RunLogWriter;
  friend class RunLogReader;
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

// The writing side of the run logs under one directory (see RunLogStore for the layout):
// makes the logs, flushes them (the background flusher waits through the injected Clock),
// discards refused ones and removes old day folders. Owns the flusher thread (started by
// Init, stopped by Shutdown or the destructor, which write everything still buffered).
// Thread-safe.
class RunLogWriter {
 public:
  RunLogWriter(std::string log_dir, std::shared_ptr<run_log_internal::State> state);
  ~RunLogWriter();  // Shutdown().
  RunLogWriter(const RunLogWriter&) = delete;
  RunLogWriter& operator=(const RunLogWriter&) = delete;

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

  // Deletes day folders (segments and old per-run files) older than `retention_days` days
  // before today (UTC). Returns how many folders were removed. retention_days <= 0 removes
  // nothing.
  int Cleanup(int retention_days);

  // Writes the logs whose first unwritten line is flush_interval old or older; returns how
  // many were written. The flusher calls it; tests call it with a SimulatedClock.
  int FlushDue();
  // Writes every open log's buffered lines now.
  void FlushAll();
  // Stops the flusher and writes everything buffered; appends from then on are written at
  // once. Idempotent.
  void Shutdown();

  const std::string& dir() const { return dir_; }
  // What the writer shares with its logs and the reader.
  const std::shared_ptr<run_log_internal::State>& state() const { return state_; }

 private:
  void FlusherLoop();

  const std::string dir_;
  const std::shared_ptr<run_log_internal::State> state_;
  std::thread flusher_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_LOG_WRITER_H_
