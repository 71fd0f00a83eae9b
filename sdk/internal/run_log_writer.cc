#include "sdk/internal/run_log_writer.h"

#include <pthread.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sdk/internal/private_dir.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {

namespace run_log_internal {

bool State::Enqueue(std::weak_ptr<RunLogFile> log, absl::Time due_at, uint64_t flushes) {
  absl::MutexLock lock(&mu);
  if (stopped) return false;
  due.push_back(Due{due_at, std::move(log), flushes});
  return true;
}

void State::Remember(int64_t run_id, const std::string& day) {
  absl::MutexLock lock(&mu);
  if (days.insert_or_assign(run_id, day).second) {
    days_order.push_back(run_id);
    while (days_order.size() > kRememberedDays) {
      days.erase(days_order.front());
      days_order.pop_front();
    }
  }
}

void State::ForgetDay(int64_t run_id) {
  absl::MutexLock lock(&mu);
  days.erase(run_id);  // Its days_order entry goes when it reaches the front.
}

void State::Unregister(int64_t run_id, const RunLogFile* log) {
  absl::MutexLock lock(&mu);
  auto it = open.find(run_id);
  if (it != open.end() && it->second.raw == log) open.erase(it);
}

std::shared_ptr<RunLogFile> State::Open(int64_t run_id) {
  absl::MutexLock lock(&mu);
  auto it = open.find(run_id);
  if (it == open.end()) return nullptr;
  return it->second.weak.lock();
}

bool ParseDayFolder(absl::string_view name, absl::CivilDay* day) {
  return IsDayName(name) && absl::ParseCivilTime(name, day);
}

}  // namespace run_log_internal

namespace {

namespace fs = std::filesystem;
using run_log_internal::ParseDayFolder;
using run_log_internal::State;

// A buffer that grew larger than this is released after a flush (a long run's logging burst
// should not pin memory for the rest of the run).
constexpr size_t kKeptBufferCapacity = 4096;

std::string DayFolder(absl::Time t) { return absl::FormatTime("%Y-%m-%d", t, absl::UTCTimeZone()); }

// Whether a log queued for `due` is to be written at `now`. A due time more than an interval
// ahead means the clock was set back: written too, rather than held up by the jump.
bool IsDue(absl::Time due, absl::Time now, absl::Duration interval) {
  return due <= now || due - now > interval;
}

}  // namespace

RunLogFile::RunLogFile(std::shared_ptr<State> state, int64_t run_id, std::string day)
    : state_(std::move(state)), run_id_(run_id), day_(std::move(day)) {}

RunLogFile::~RunLogFile() {
  bool registered;
  {
    absl::MutexLock lock(&mu_);
    if (!discarded_) FlushLocked();
    registered = !unregistered_;
  }
  if (registered) state_->Unregister(run_id_, this);
}

void RunLogFile::Append(absl::string_view text) {
  const absl::Time now = state_->clock.Now();
  const std::string stamp = absl::FormatTime("%Y-%m-%d %H:%M:%E3S ", now, absl::UTCTimeZone());
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    absl::string_view line =
        text.substr(start, nl == absl::string_view::npos ? absl::string_view::npos : nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    absl::StrAppend(&out, stamp, line, "\n");
    if (nl == absl::string_view::npos || nl + 1 == text.size()) break;
    start = nl + 1;
  }
  const RunLogOptions& options = state_->options;
  absl::MutexLock lock(&mu_);
  if (discarded_) return;
  const bool first = buffer_.empty();
  buffer_.append(out);
  if (direct_ || options.flush_interval <= absl::ZeroDuration() ||
      buffer_.size() >= options.flush_bytes) {
    FlushLocked();
    return;
  }
  if (first && !state_->Enqueue(weak_from_this(), now + options.flush_interval, flushes_)) {
    FlushLocked();  // The store is shut down.
  }
}

void RunLogFile::Flush() {
  absl::MutexLock lock(&mu_);
  FlushLocked();
}

void RunLogFile::Close() {
  {
    absl::MutexLock lock(&mu_);
    FlushLocked();
    direct_ = true;
    unregistered_ = true;
  }
  state_->Unregister(run_id_, this);
}

std::string RunLogFile::Buffered(uint64_t* flushes) const {
  absl::MutexLock lock(&mu_);
  *flushes = flushes_;
  return buffer_;
}

uint64_t RunLogFile::flushes() const {
  absl::MutexLock lock(&mu_);
  return flushes_;
}

bool RunLogFile::FlushIfUnchanged(uint64_t flushes) {
  absl::MutexLock lock(&mu_);
  if (flushes_ != flushes) return false;
  return FlushLocked();
}

void RunLogFile::Discard() {
  bool wrote;
  {
    absl::MutexLock lock(&mu_);
    discarded_ = true;
    buffer_.clear();
    ++flushes_;
    wrote = wrote_;
    if (wrote) {
      absl::Status st = state_->segments->Discard(day_, run_id_, first_chunk_);
      if (!st.ok()) spdlog::error("run {}: cannot discard its log: {}", run_id_, st.ToString());
    }
    unregistered_ = true;
  }
  // Its day is looked up again: an earlier process's lines of the run may remain.
  if (wrote) state_->ForgetDay(run_id_);
  state_->Unregister(run_id_, this);
}

void RunLogFile::WriteThrough() {
  absl::MutexLock lock(&mu_);
  FlushLocked();
  direct_ = true;
}

bool RunLogFile::FlushLocked() {
  if (buffer_.empty()) return false;
  ++flushes_;
  absl::StatusOr<LogChunk> chunk =
      state_->segments == nullptr
          ? absl::FailedPreconditionError("the run log store was not initialized")
          : state_->segments->Append(day_, run_id_, buffer_);
  if (chunk.ok()) {
    if (!wrote_) {
      wrote_ = true;
      first_chunk_ = *chunk;
      state_->Remember(run_id_, day_);
    }
  } else if (!write_failed_) {
    // A full disk must not fail the run; the lines are lost.
    write_failed_ = true;
    spdlog::error("run {}: cannot write its log in {}: {}", run_id_, day_,
                  chunk.status().ToString());
  }
  if (buffer_.capacity() > kKeptBufferCapacity) {
    std::string().swap(buffer_);
  } else {
    buffer_.clear();
  }
  return chunk.ok();
}

RunLogWriter::RunLogWriter(std::string log_dir, std::shared_ptr<State> state)
    : dir_(std::move(log_dir)), state_(std::move(state)) {}

RunLogWriter::~RunLogWriter() { Shutdown(); }

absl::Status RunLogWriter::Init() {
  if (absl::Status s = MakePrivateDir(dir_, "log_dir"); !s.ok()) return s;
  std::error_code ec;
  fs::path canonical = fs::canonical(dir_, ec);
  if (ec) return absl::InternalError(absl::StrCat("log_dir ", dir_, ": ", ec.message()));
  state_->canonical_dir = canonical.string();
  if (state_->segments == nullptr) {
    auto segments = LogSegments::Open(state_->canonical_dir, state_->options.segment_bytes);
    if (!segments.ok()) return segments.status();
    state_->segments = std::move(*segments);
  }
  absl::MutexLock lock(&state_->mu);
  if (state_->options.background_flush && !state_->stopped && !flusher_.joinable()) {
    flusher_ = std::thread([this] { FlusherLoop(); });
  }
  return absl::OkStatus();
}

void RunLogWriter::FlusherLoop() {
  pthread_setname_np(pthread_self(), "jobwheel-logs");
  State& s = *state_;
  absl::MutexLock lock(&s.mu);
  auto wake = [&s]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) { return s.stopped || !s.due.empty(); };
  while (!s.stopped) {
    if (s.due.empty()) {
      s.mu.Await(absl::Condition(&wake));
      continue;
    }
    const absl::Time now = s.clock.Now();
    const absl::Time due = s.due.front().due;
    if (!IsDue(due, now, s.options.flush_interval)) {
      // Due times only grow (one interval after each first line), so a log queued meanwhile
      // is due after this one.
      s.clock.AwaitWithDeadline(&s.mu, absl::Condition(&s.stopped), due);
      continue;
    }
    s.mu.Unlock();
    FlushDue();
    s.mu.Lock();
  }
}

int RunLogWriter::FlushDue() {
  State& s = *state_;
  std::vector<State::Due> ready;
  {
    absl::MutexLock lock(&s.mu);
    const absl::Time now = state_->clock.Now();
    while (!s.due.empty() && IsDue(s.due.front().due, now, s.options.flush_interval)) {
      ready.push_back(std::move(s.due.front()));
      s.due.pop_front();
    }
  }
  int written = 0;
  for (State::Due& d : ready) {
    std::shared_ptr<RunLogFile> log = d.log.lock();
    if (log != nullptr && log->FlushIfUnchanged(d.flushes)) ++written;
  }
  return written;
}

void RunLogWriter::FlushAll() {
  std::vector<std::shared_ptr<RunLogFile>> logs;
  {
    absl::MutexLock lock(&state_->mu);
    for (const auto& [id, entry] : state_->open) {
      if (auto log = entry.weak.lock()) logs.push_back(std::move(log));
    }
  }
  for (const auto& log : logs) log->Flush();
}

void RunLogWriter::Shutdown() {
  std::vector<std::shared_ptr<RunLogFile>> logs;
  {
    absl::MutexLock lock(&state_->mu);
    if (state_->stopped) return;
    state_->stopped = true;
    state_->due.clear();
  }
  if (flusher_.joinable()) flusher_.join();
  {
    absl::MutexLock lock(&state_->mu);
    for (const auto& [id, entry] : state_->open) {
      if (auto log = entry.weak.lock()) logs.push_back(std::move(log));
    }
  }
  for (const auto& log : logs) log->WriteThrough();
}

absl::StatusOr<std::shared_ptr<RunLogFile>> RunLogWriter::Create(int64_t run_id, bool* created) {
  if (run_id <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  std::string day = DayFolder(state_->clock.Now());
  absl::MutexLock lock(&state_->mu);
  State::OpenLog& entry = state_->open[run_id];
  if (std::shared_ptr<RunLogFile> log = entry.weak.lock()) {
    if (created != nullptr) *created = false;
    return log;
  }
  std::shared_ptr<RunLogFile> log(new RunLogFile(state_, run_id, std::move(day)));
  entry.weak = log;
  entry.raw = log.get();
  if (created != nullptr) *created = true;
  return log;
}

void RunLogWriter::Remove(int64_t run_id) {
  std::shared_ptr<RunLogFile> log = state_->Open(run_id);
  if (log != nullptr) log->Discard();
}

int RunLogWriter::Cleanup(int retention_days) {
  if (retention_days <= 0) return 0;
  const absl::CivilDay today = absl::ToCivilDay(state_->clock.Now(), absl::UTCTimeZone());
  const absl::CivilDay oldest_kept = today - retention_days;
  std::error_code ec;
  std::vector<std::string> old;
  for (fs::directory_iterator it(state_->canonical_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    absl::CivilDay day;
    const std::string name = it->path().filename().string();
    if (ParseDayFolder(name, &day) && day < oldest_kept) old.push_back(name);
  }
  int removed = 0;
  for (const std::string& name : old) {
    std::error_code rm;
    fs::remove_all(fs::path(state_->canonical_dir) / name, rm);
    if (!rm) ++removed;
    if (state_->segments != nullptr) state_->segments->DropDay(name);
  }
  if (!old.empty()) {
    absl::MutexLock lock(&state_->mu);
    for (auto it = state_->days.begin(); it != state_->days.end();) {
      if (std::find(old.begin(), old.end(), it->second) != old.end()) {
        state_->days.erase(it++);
      } else {
        ++it;
      }
    }
  }
  return removed;
}

}  // namespace jobwheel::sdk
