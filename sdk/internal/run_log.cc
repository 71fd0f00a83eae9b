#include "sdk/internal/run_log.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "sdk/internal/private_dir.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {

namespace run_log_internal {

// What the store shares with its logs (which may outlive it). Lock order: a log's mu_, then
// State::mu; never the reverse.
struct State {
  State(const Clock& clock, RunLogOptions options) : clock(clock), options(options) {}

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
  bool Enqueue(std::weak_ptr<RunLogFile> log, absl::Time due_at, uint64_t flushes) {
    absl::MutexLock lock(&mu);
    if (stopped) return false;
    const bool was_empty = due.empty();
    due.push_back(Due{due_at, std::move(log), flushes});
    // Due times only grow (one interval after each first line), so a flusher waiting for an
    // earlier entry need not be woken.
    if (was_empty) cv.Signal();
    return true;
  }

  // Remembers the day folder of a log this process wrote.
  void Remember(int64_t run_id, const std::string& day) {
    absl::MutexLock lock(&mu);
    if (days.insert_or_assign(run_id, day).second) {
      days_order.push_back(run_id);
      while (days_order.size() > kRememberedDays) {
        days.erase(days_order.front());
        days_order.pop_front();
      }
    }
  }

  void ForgetDay(int64_t run_id) {
    absl::MutexLock lock(&mu);
    days.erase(run_id);  // Its days_order entry goes when it reaches the front.
  }

  // Removes `log` from the open logs (if it is still the one registered for run_id).
  void Unregister(int64_t run_id, const RunLogFile* log) {
    absl::MutexLock lock(&mu);
    auto it = open.find(run_id);
    if (it != open.end() && it->second.raw == log) open.erase(it);
  }

  const Clock& clock;
  const RunLogOptions options;
  // Set by RunLogStore::Init, before any log exists; logs write through it even after the
  // store is gone.
  std::unique_ptr<LogSegments> segments;
  absl::Mutex mu;
  absl::CondVar cv;  // `due` got an entry, or the store shuts down.
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

}  // namespace run_log_internal

namespace {

namespace fs = std::filesystem;
using run_log_internal::State;

constexpr size_t kMaxPageBytes = 1 << 20;
// A buffer that grew larger than this is released after a flush (a long run's logging burst
// should not pin memory for the rest of the run).
constexpr size_t kKeptBufferCapacity = 4096;

std::string DayFolder(absl::Time t) { return absl::FormatTime("%Y-%m-%d", t, absl::UTCTimeZone()); }

bool ParseDayFolder(absl::string_view name, absl::CivilDay* day) {
  return IsDayName(name) && absl::ParseCivilTime(name, day);
}

// The per-run file of earlier versions.
std::string LegacyName(int64_t run_id) { return absl::StrCat(run_id, ".log"); }

absl::Status Outside(int64_t run_id) {
  return absl::PermissionDeniedError(
      absl::StrCat("run ", run_id, ": log path resolves outside the log directory"));
}

// Streams the whole lines of a file; a last line without '\n' (still being written) is left
// out.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  bool Next(absl::string_view* line) {
    if (!Fill()) return false;
    const size_t nl = buffer_.find('\n', pos_);
    *line = absl::string_view(buffer_).substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return true;
  }
  // Whether Next would return a line.
  bool HasMore() { return Fill(); }

 private:
  // Makes sure a whole line is buffered, reading more if needed; false at the end.
  bool Fill() {
    while (buffer_.find('\n', pos_) == std::string::npos) {
      if (eof_) return false;
      buffer_.erase(0, pos_);
      pos_ = 0;
      char block[64 * 1024];
      ssize_t n;
      do {
        n = ::read(fd_, block, sizeof(block));
      } while (n < 0 && errno == EINTR);
      if (n <= 0) {
        eof_ = true;
      } else {
        buffer_.append(block, static_cast<size_t>(n));
      }
    }
    return true;
  }

  const int fd_;
  std::string buffer_;
  size_t pos_ = 0;
  bool eof_ = false;
};

// Whether a log queued for `due` is to be written at `now`. A due time more than an interval
// ahead means the clock was set back: written too, rather than held up by the jump.
bool IsDue(absl::Time due, absl::Time now, absl::Duration interval) {
  return due <= now || due - now > interval;
}

// Collects the lines of a page: lines are offered in order, numbered from 1.
class PageBuilder {
 public:
  PageBuilder(int from_line, int max_lines) : max_lines_(max_lines) {
    page_.from_line = from_line;
    page_.to_line = from_line - 1;
  }
  // Returns true when the page is full (this line was the last one it takes).
  bool Offer(absl::string_view line) {
    ++number_;
    if (number_ < page_.from_line) return false;
    bytes_ += line.size();
    page_.lines.emplace_back(line);
    page_.to_line = number_;
    return static_cast<int>(page_.lines.size()) >= max_lines_ || bytes_ >= kMaxPageBytes;
  }
  RunLogStore::Page Finish(bool eof) {
    page_.eof = eof;
    return std::move(page_);
  }

 private:
  const int max_lines_;
  RunLogStore::Page page_;
  int number_ = 0;
  size_t bytes_ = 0;
};

// Offers the '\n'-separated lines of `rest` to `page` until it is full; returns whether it
// filled, with `*rest` what follows the last line offered.
bool OfferLines(PageBuilder& page, absl::string_view* rest) {
  while (!rest->empty()) {
    const size_t nl = rest->find('\n');
    const absl::string_view line = rest->substr(0, nl);
    rest->remove_prefix(nl == absl::string_view::npos ? rest->size() : nl + 1);
    if (page.Offer(line)) return true;
  }
  return false;
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

RunLogStore::RunLogStore(std::string log_dir, const Clock& clock, RunLogOptions options)
    : dir_(std::move(log_dir)), clock_(clock), state_(std::make_shared<State>(clock, options)) {}

RunLogStore::~RunLogStore() { Shutdown(); }

absl::Status RunLogStore::Init() {
  if (absl::Status s = MakePrivateDir(dir_, "log_dir"); !s.ok()) return s;
  std::error_code ec;
  fs::path canonical = fs::canonical(dir_, ec);
  if (ec) return absl::InternalError(absl::StrCat("log_dir ", dir_, ": ", ec.message()));
  canonical_dir_ = canonical.string();
  if (state_->segments == nullptr) {
    auto segments = LogSegments::Open(canonical_dir_, state_->options.segment_bytes);
    if (!segments.ok()) return segments.status();
    state_->segments = std::move(*segments);
  }
  absl::MutexLock lock(&state_->mu);
  if (state_->options.background_flush && !state_->stopped && !flusher_.joinable()) {
    flusher_ = std::thread([this] { FlusherLoop(); });
  }
  return absl::OkStatus();
}

void RunLogStore::FlusherLoop() {
  pthread_setname_np(pthread_self(), "jobwheel-logs");
  State& s = *state_;
  absl::MutexLock lock(&s.mu);
  while (!s.stopped) {
    if (s.due.empty()) {
      s.cv.Wait(&s.mu);
      continue;
    }
    const absl::Time now = clock_.Now();
    const absl::Time due = s.due.front().due;
    if (!IsDue(due, now, s.options.flush_interval)) {
      s.cv.WaitWithTimeout(&s.mu, due - now);
      continue;
    }
    s.mu.Unlock();
    FlushDue();
    s.mu.Lock();
  }
}

int RunLogStore::FlushDue() {
  State& s = *state_;
  std::vector<State::Due> ready;
  {
    absl::MutexLock lock(&s.mu);
    const absl::Time now = clock_.Now();
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

void RunLogStore::FlushAll() {
  std::vector<std::shared_ptr<RunLogFile>> logs;
  {
    absl::MutexLock lock(&state_->mu);
    for (const auto& [id, entry] : state_->open) {
      if (auto log = entry.weak.lock()) logs.push_back(std::move(log));
    }
  }
  for (const auto& log : logs) log->Flush();
}

void RunLogStore::Shutdown() {
  std::vector<std::shared_ptr<RunLogFile>> logs;
  {
    absl::MutexLock lock(&state_->mu);
    if (state_->stopped) return;
    state_->stopped = true;
    state_->due.clear();
    state_->cv.SignalAll();
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

absl::StatusOr<std::shared_ptr<RunLogFile>> RunLogStore::Create(int64_t run_id, bool* created) {
  if (run_id <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  std::string day = DayFolder(clock_.Now());
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

std::shared_ptr<RunLogFile> RunLogStore::OpenLog(int64_t run_id) {
  absl::MutexLock lock(&state_->mu);
  auto it = state_->open.find(run_id);
  if (it == state_->open.end()) return nullptr;
  return it->second.weak.lock();
}

void RunLogStore::Remove(int64_t run_id) {
  std::shared_ptr<RunLogFile> log = OpenLog(run_id);
  if (log != nullptr) log->Discard();
}

absl::StatusOr<RunLogStore::OnDisk> RunLogStore::Look(int64_t run_id, const std::string& day,
                                                      bool skip_bad_day) {
  if (state_->segments == nullptr) {
    return absl::FailedPreconditionError("the run log store was not initialized");
  }
  OnDisk disk;
  absl::StatusOr<UniqueFd> day_fd = state_->segments->OpenDay(day);
  if (absl::IsNotFound(day_fd.status())) return disk;
  if (absl::IsPermissionDenied(day_fd.status())) {
    if (skip_bad_day) return disk;
    return Outside(run_id);
  }
  if (!day_fd.ok()) return day_fd.status();
  disk.day = std::move(*day_fd);
  const std::string legacy = LegacyName(run_id);
  disk.legacy.Reset(::openat(disk.day.get(), legacy.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!disk.legacy.valid() && errno != ENOENT) {
    if (errno == ELOOP) return Outside(run_id);  // A planted symlink.
    return absl::InternalError(absl::StrCat(day, "/", legacy, ": ", std::strerror(errno)));
  }
  absl::StatusOr<std::vector<LogChunk>> chunks =
      state_->segments->Chunks(disk.day.get(), day, run_id);
  if (!chunks.ok()) return chunks.status();
  disk.chunks = std::move(*chunks);
  return disk;
}

absl::StatusOr<RunLogStore::OnDisk> RunLogStore::Find(int64_t run_id) {
  std::string remembered;
  {
    absl::MutexLock lock(&state_->mu);
    auto it = state_->days.find(run_id);
    if (it != state_->days.end()) remembered = it->second;
  }
  if (!remembered.empty()) {
    absl::StatusOr<OnDisk> disk = Look(run_id, remembered);
    if (!disk.ok() || !disk->empty()) return disk;
  }
  // A run from an earlier process: look through the day folders, newest first.
  std::error_code ec;
  std::vector<std::string> days;
  for (fs::directory_iterator it(canonical_dir_, ec), end; !ec && it != end; it.increment(ec)) {
    absl::CivilDay day;
    const std::string name = it->path().filename().string();
    if (ParseDayFolder(name, &day) && name != remembered) days.push_back(name);
  }
  std::sort(days.rbegin(), days.rend());
  for (const std::string& day : days) {
    absl::StatusOr<OnDisk> disk = Look(run_id, day, /*skip_bad_day=*/true);
    if (!disk.ok() || !disk->empty()) return disk;
  }
  return absl::NotFoundError(absl::StrCat("run ", run_id, ": no log on this executor"));
}

RunLogStore::Page RunLogStore::ReadPage(OnDisk& disk, const std::string* buffered, int from_line,
                                        int max_lines) {
  PageBuilder page(from_line, max_lines);
  const bool buffered_lines = buffered != nullptr && !buffered->empty();
  absl::string_view line;
  if (disk.legacy.valid()) {
    LineReader reader(disk.legacy.get());
    while (reader.Next(&line)) {
      if (page.Offer(line)) {
        return page.Finish(!reader.HasMore() && disk.chunks.empty() && !buffered_lines);
      }
    }
  }
  LogSegments::ChunkReader chunks(state_->segments.get(), disk.day.get());
  for (size_t i = 0; i < disk.chunks.size(); ++i) {
    absl::StatusOr<std::string> data = chunks.Read(disk.chunks[i]);
    if (!data.ok()) {
      // Cut short since it was indexed (truncated by hand?): its lines are skipped.
      spdlog::warn("run log: {}", data.status().ToString());
      continue;
    }
    absl::string_view rest(*data);  // Chunks hold whole lines.
    if (OfferLines(page, &rest)) {
      return page.Finish(rest.empty() && i + 1 == disk.chunks.size() && !buffered_lines);
    }
  }
  if (buffered_lines) {
    absl::string_view rest(*buffered);  // Buffered lines always end in '\n'.
    if (OfferLines(page, &rest)) return page.Finish(rest.empty());
  }
  return page.Finish(true);
}

absl::StatusOr<RunLogStore::Page> RunLogStore::Read(int64_t run_id, int from_line, int max_lines) {
  if (run_id <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  if (from_line < 1) from_line = 1;
  if (max_lines < 1) max_lines = 1;
  std::shared_ptr<RunLogFile> log = OpenLog(run_id);
  if (log == nullptr) {
    absl::StatusOr<OnDisk> disk = Find(run_id);
    if (!disk.ok()) return disk.status();
    return ReadPage(*disk, nullptr, from_line, max_lines);
  }
  // The lines on disk, then the buffered ones. A flush between taking the buffered lines and
  // looking at the disk would show lines twice: then read again, and after a few such races
  // read with the log's lock held (which holds up its appends for that long).
  for (int attempt = 0; attempt < 3; ++attempt) {
    uint64_t flushes = 0;
    const std::string buffered = log->Buffered(&flushes);
    absl::StatusOr<OnDisk> disk = Look(run_id, log->day());
    if (!disk.ok()) return disk.status();
    if (log->flushes() == flushes) return ReadPage(*disk, &buffered, from_line, max_lines);
  }
  absl::StatusOr<Page> page;
  log->WithBuffered([&](const std::string& buffered) {
    absl::StatusOr<OnDisk> disk = Look(run_id, log->day());
    page = disk.ok() ? absl::StatusOr<Page>(ReadPage(*disk, &buffered, from_line, max_lines))
                     : absl::StatusOr<Page>(disk.status());
  });
  return page;
}

int RunLogStore::Cleanup(int retention_days) {
  if (retention_days <= 0) return 0;
  const absl::CivilDay today = absl::ToCivilDay(clock_.Now(), absl::UTCTimeZone());
  const absl::CivilDay oldest_kept = today - retention_days;
  std::error_code ec;
  std::vector<std::string> old;
  for (fs::directory_iterator it(canonical_dir_, ec), end; !ec && it != end; it.increment(ec)) {
    absl::CivilDay day;
    const std::string name = it->path().filename().string();
    if (ParseDayFolder(name, &day) && day < oldest_kept) old.push_back(name);
  }
  int removed = 0;
  for (const std::string& name : old) {
    std::error_code rm;
    fs::remove_all(fs::path(canonical_dir_) / name, rm);
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
