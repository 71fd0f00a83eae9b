#include "sdk/internal/run_log_reader.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {
namespace {

namespace fs = std::filesystem;
using run_log_internal::ParseDayFolder;

constexpr size_t kMaxPageBytes = 1 << 20;

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
      const ssize_t n = ReadSome(fd_, block, sizeof(block));
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
  RunLogPage Finish(bool eof) {
    page_.eof = eof;
    return std::move(page_);
  }

 private:
  const int max_lines_;
  RunLogPage page_;
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

RunLogReader::RunLogReader(std::shared_ptr<run_log_internal::State> state)
    : state_(std::move(state)) {}

absl::StatusOr<RunLogReader::OnDisk> RunLogReader::Look(int64_t run_id, const std::string& day,
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

absl::StatusOr<RunLogReader::OnDisk> RunLogReader::Find(int64_t run_id) {
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
  for (fs::directory_iterator it(state_->canonical_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
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

RunLogPage RunLogReader::ReadPage(OnDisk& disk, const std::string* buffered, int from_line,
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

absl::StatusOr<int64_t> RunLogReader::MaxRunId() {
  if (state_->segments == nullptr) {
    return absl::FailedPreconditionError("the run log store was not initialized");
  }
  int64_t max = 0;
  std::error_code ec;
  for (fs::directory_iterator it(state_->canonical_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    absl::CivilDay civil;
    const std::string day = it->path().filename().string();
    if (!ParseDayFolder(day, &civil)) continue;
    absl::StatusOr<UniqueFd> day_fd = state_->segments->OpenDay(day);
    if (!day_fd.ok()) continue;  // Gone meanwhile, or not a plain folder: holds no log of ours.
    absl::StatusOr<int64_t> in_segments = state_->segments->MaxRunId(day_fd->get(), day);
    if (!in_segments.ok()) return in_segments.status();
    max = std::max(max, *in_segments);
    // Single-file logs, named "<run id>.log".
    std::error_code day_ec;
    for (fs::directory_iterator f(it->path(), day_ec), fend; !day_ec && f != fend;
         f.increment(day_ec)) {
      const std::string name = f->path().filename().string();
      int64_t id = 0;
      if (absl::EndsWith(name, ".log") &&
          absl::SimpleAtoi(absl::string_view(name).substr(0, name.size() - 4), &id)) {
        max = std::max(max, id);
      }
    }
  }
  if (ec) return absl::InternalError(absl::StrCat(state_->canonical_dir, ": ", ec.message()));
  return max;
}

absl::StatusOr<RunLogPage> RunLogReader::Read(int64_t run_id, int from_line, int max_lines) {
  if (run_id <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  if (from_line < 1) from_line = 1;
  if (max_lines < 1) max_lines = 1;
  std::shared_ptr<RunLogFile> log = state_->Open(run_id);
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
  absl::StatusOr<RunLogPage> page;
  log->WithBuffered([&](const std::string& buffered) {
    absl::StatusOr<OnDisk> disk = Look(run_id, log->day());
    page = disk.ok() ? absl::StatusOr<RunLogPage>(ReadPage(*disk, &buffered, from_line, max_lines))
                     : absl::StatusOr<RunLogPage>(disk.status());
  });
  return page;
}

}  // namespace jobwheel::sdk
