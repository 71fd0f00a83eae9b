#include "sdk/internal/log_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "sdk/internal/byte_codec.h"
#include "sdk/internal/file_io.h"

namespace jobwheel::sdk {
namespace {

constexpr absl::string_view kPrefix = "seg-";
constexpr absl::string_view kDataSuffix = ".log";
constexpr absl::string_view kIndexSuffix = ".idx";
// Day folders with a segment open for appending: a run's chunks go to the day it was
// accepted, so runs from before midnight (or days ago) keep theirs open too. Opening another
// closes the least recently used one.
constexpr size_t kMaxOpenDays = 4;
// Index bytes read at a time (whole records).
constexpr int64_t kIndexBlock = 2048 * IndexRecord::kSize;

// "seg-<n><suffix>" → n (1 ≤ n ≤ 2^32-1, digits only).
bool ParseSegmentName(absl::string_view name, absl::string_view suffix, uint32_t* n) {
  if (!absl::ConsumePrefix(&name, kPrefix) || !absl::ConsumeSuffix(&name, suffix)) return false;
  if (name.empty() || name.size() > 10) return false;
  for (char c : name) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(name, &v) || v == 0 || v > UINT32_MAX) return false;
  *n = static_cast<uint32_t>(v);
  return true;
}

// The segment numbers in the directory `dir_fd`: those with an index file, or (all = true)
// with either file.
absl::StatusOr<std::vector<uint32_t>> ListSegments(int dir_fd, bool all) {
  // A new open file description, so listing never disturbs dir_fd's position.
  const int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", "day folder", errno);
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int err = errno;
    ::close(fd);
    return ErrnoError("list", "day folder", err);
  }
  std::vector<uint32_t> out;
  while (const dirent* e = ::readdir(dir)) {
    uint32_t n = 0;
    if (ParseSegmentName(e->d_name, kIndexSuffix, &n) ||
        (all && ParseSegmentName(e->d_name, kDataSuffix, &n))) {
      out.push_back(n);
    }
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

absl::StatusOr<UniqueFd> OpenDayFolder(int dir_fd, absl::string_view day) {
  if (!IsDayName(day)) return absl::InvalidArgumentError(absl::StrCat("bad day folder ", day));
  const std::string name(day);
  const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) return UniqueFd(fd);
  if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no day folder ", day));
  if (errno == ELOOP || errno == ENOTDIR) {
    return absl::PermissionDeniedError(
        absl::StrCat("day folder ", day, " is not a directory inside the log directory"));
  }
  return ErrnoError("open", name, errno);
}

// Whether chunk a is at or after position (segment, offset).
bool AtOrAfter(const LogChunk& a, uint32_t segment, int64_t offset) {
  return a.segment > segment || (a.segment == segment && a.offset >= offset);
}

}  // namespace

std::string EncodeIndexRecord(const IndexRecord& record) {
  std::string out(IndexRecord::kSize, '\0');
  PutLittleEndian(&out[0], static_cast<uint64_t>(record.run_id), 8);
  PutLittleEndian(&out[8], static_cast<uint64_t>(record.offset), 8);
  PutLittleEndian(&out[16], static_cast<uint64_t>(record.length), 8);
  PutLittleEndian(&out[24], record.segment, 4);
  PutLittleEndian(&out[28], Fnv1a(absl::string_view(out).substr(0, 28)), 4);
  return out;
}

bool DecodeIndexRecord(absl::string_view bytes, IndexRecord* record) {
  if (bytes.size() < IndexRecord::kSize) return false;
  const char* p = bytes.data();
  if (static_cast<uint32_t>(GetLittleEndian(p + 28, 4)) != Fnv1a(bytes.substr(0, 28))) return false;
  IndexRecord r;
  r.run_id = static_cast<int64_t>(GetLittleEndian(p, 8));
  r.offset = static_cast<int64_t>(GetLittleEndian(p + 8, 8));
  r.length = static_cast<int64_t>(GetLittleEndian(p + 16, 8));
  r.segment = static_cast<uint32_t>(GetLittleEndian(p + 24, 4));
  if (r.run_id <= 0 || r.offset < 0) return false;
  if (r.tombstone()) {
    if (r.segment == 0) return false;
  } else if (r.length <= 0 || r.segment != 0 || r.length > INT64_MAX - r.offset) {
    return false;
  }
  *record = r;
  return true;
}

std::string SegmentDataName(uint32_t n) { return absl::StrCat(kPrefix, n, kDataSuffix); }
std::string SegmentIndexName(uint32_t n) { return absl::StrCat(kPrefix, n, kIndexSuffix); }

bool IsDayName(absl::string_view name) {
  if (name.size() != 10 || name[4] != '-' || name[7] != '-') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (i != 4 && i != 7 && !absl::ascii_isdigit(static_cast<unsigned char>(name[i]))) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::unique_ptr<LogSegments>> LogSegments::Open(const std::string& dir,
                                                               size_t segment_bytes) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", dir, errno);
  return std::unique_ptr<LogSegments>(new LogSegments(UniqueFd(fd), segment_bytes));
}

LogSegments::LogSegments(UniqueFd dir_fd, size_t segment_bytes)
    : dir_fd_(std::move(dir_fd)),
      segment_bytes_(static_cast<int64_t>(
          std::max<size_t>(1, std::min<size_t>(segment_bytes, static_cast<size_t>(INT64_MAX))))) {}

absl::StatusOr<LogChunk> LogSegments::Append(absl::string_view day, int64_t run_id,
                                             absl::string_view lines) {
  if (run_id <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  if (lines.empty()) return absl::InvalidArgumentError("lines: must not be empty");
  absl::MutexLock lock(&write_mu_);
  absl::StatusOr<Writer*> writer = WriterFor(day);
  if (!writer.ok()) return writer.status();
  Writer* w = *writer;
  // Written at the segment's known end: after a failed (partial) write, the next chunk
  // overwrites those bytes, which no index record points to.
  absl::Status st = WriteAll(w->data.get(), lines, w->data_name, w->data_bytes);
  if (!st.ok()) return st;
  const IndexRecord record{run_id, w->data_bytes, static_cast<int64_t>(lines.size()), 0};
  st = AppendRecord(day, w, record);
  if (!st.ok()) return st;
  w->data_bytes += record.length;
  return LogChunk{w->n, record.offset, record.length};
}

absl::Status LogSegments::Discard(absl::string_view day, int64_t run_id, const LogChunk& first) {
  if (run_id <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  absl::MutexLock lock(&write_mu_);
  absl::StatusOr<Writer*> writer = WriterFor(day);
  if (!writer.ok()) return writer.status();
  return AppendRecord(day, *writer,
                      IndexRecord{run_id, first.offset, IndexRecord::kTombstone, first.segment});
}

absl::Status LogSegments::AppendRecord(absl::string_view day, Writer* w,
                                       const IndexRecord& record) {
  absl::Status st =
      WriteAll(w->index.get(), EncodeIndexRecord(record), w->index_name, w->index_bytes);
  if (!st.ok()) return st;
  w->index_bytes += IndexRecord::kSize;
  absl::MutexLock lock(&info_mu_);
  Info& info = info_[day][w->n];
  info.own = true;
  info.index_bytes = w->index_bytes;
  info.min_run = std::min(info.min_run, record.run_id);
  info.max_run = std::max(info.max_run, record.run_id);
  return absl::OkStatus();
}

absl::StatusOr<LogSegments::Writer*> LogSegments::WriterFor(absl::string_view day) {
  auto it = writers_.find(day);
  uint64_t next = 0;  // Unknown: look at the folder.
  if (it != writers_.end()) {
    struct stat st;
    if (::fstat(it->second.data.get(), &st) == 0 && st.st_nlink == 0) {
      // The day folder was removed behind our back: remake it with a new segment.
      writers_.erase(it);
      ForgetDay(day);
    } else if (it->second.data_bytes >= segment_bytes_) {
      next = uint64_t{it->second.n} + 1;  // Full: the next number.
      writers_.erase(it);
    } else {
      it->second.last_used = ++uses_;
      return &it->second;
    }
  }
  absl::StatusOr<Writer> created = CreateSegment(day, next);
  if (!created.ok()) return created.status();
  while (writers_.size() >= kMaxOpenDays) {
    writers_.erase(std::min_element(
        writers_.begin(), writers_.end(),
        [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; }));
  }
  {
    absl::MutexLock lock(&info_mu_);
    info_[day][created->n] = Info{true, 0, INT64_MAX, INT64_MIN};
  }
  Writer& w = writers_[std::string(day)];
  w = std::move(*created);
  w.last_used = ++uses_;
  return &w;
}

absl::StatusOr<LogSegments::Writer> LogSegments::CreateSegment(absl::string_view day,
                                                               uint64_t next) {
  absl::StatusOr<UniqueFd> day_fd = OpenDayFolder(dir_fd_.get(), day);
  if (absl::IsNotFound(day_fd.status())) {
    const std::string name(day);
    if (::mkdirat(dir_fd_.get(), name.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoError("create", name, errno);
    }
    day_fd = OpenDayFolder(dir_fd_.get(), day);
  }
  if (!day_fd.ok()) return day_fd.status();
  uint64_t n = next;
  if (n == 0) {
    absl::StatusOr<std::vector<uint32_t>> existing = ListSegments(day_fd->get(), /*all=*/true);
    if (!existing.ok()) return existing.status();
    n = existing->empty() ? 1 : uint64_t{existing->back()} + 1;
  }
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
  // Another process may take a number at the same time: O_EXCL decides, the loser moves on.
  for (int attempt = 0; attempt < 100 && n <= UINT32_MAX; ++attempt, ++n) {
    const uint32_t number = static_cast<uint32_t>(n);
    const std::string data_name = SegmentDataName(number);
    UniqueFd data(::openat(day_fd->get(), data_name.c_str(), kFlags, 0600));
    if (!data.valid()) {
      if (errno == EEXIST) continue;
      return ErrnoError("create", absl::StrCat(day, "/", data_name), errno);
    }
    const std::string index_name = SegmentIndexName(number);
    UniqueFd index(::openat(day_fd->get(), index_name.c_str(), kFlags, 0600));
    if (!index.valid()) {
      const int err = errno;
      ::unlinkat(day_fd->get(), data_name.c_str(), 0);
      if (err == EEXIST) continue;
      return ErrnoError("create", absl::StrCat(day, "/", index_name), err);
    }
    Writer w;
    w.n = number;
    w.data_name = absl::StrCat(day, "/", SegmentDataName(number));
    w.index_name = absl::StrCat(day, "/", SegmentIndexName(number));
    w.data = std::move(data);
    w.index = std::move(index);
    return w;
  }
  return absl::ResourceExhaustedError(absl::StrCat("no free segment number in ", day));
}

void LogSegments::DropDay(absl::string_view day) {
  {
    absl::MutexLock lock(&write_mu_);
    if (auto it = writers_.find(day); it != writers_.end()) writers_.erase(it);
  }
  ForgetDay(day);
}

void LogSegments::ForgetDay(absl::string_view day) {
  absl::MutexLock lock(&info_mu_);
  info_.erase(day);
}

absl::StatusOr<UniqueFd> LogSegments::OpenDay(absl::string_view day) const {
  return OpenDayFolder(dir_fd_.get(), day);
}

absl::StatusOr<std::string> LogSegments::ReadIndex(int day_fd, uint32_t n, int64_t from,
                                                   int64_t to) {
  const std::string name = SegmentIndexName(n);
  UniqueFd fd(::openat(day_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open", name, errno);
  absl::StatusOr<std::string> bytes = ReadAt(fd.get(), from, to - from, name);
  if (!bytes.ok()) return bytes;
  // A torn last record (a crash mid-write) is left out.
  bytes->resize(bytes->size() - bytes->size() % IndexRecord::kSize);
  absl::MutexLock lock(&info_mu_);
  stats_.index_bytes_read += bytes->size();
  return bytes;
}

LogSegments::Info LogSegments::Refresh(int day_fd, absl::string_view day, uint32_t n) {
  Info info;
  {
    absl::MutexLock lock(&info_mu_);
    if (auto d = info_.find(day); d != info_.end()) {
      if (auto i = d->second.find(n); i != d->second.end()) info = i->second;
    }
  }
  if (info.own) return info;  // Exact: only this process appends to it.
  struct stat st;
  const std::string name = SegmentIndexName(n);
  if (::fstatat(day_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
    return Info{};
  }
  const int64_t whole = st.st_size - st.st_size % static_cast<int64_t>(IndexRecord::kSize);
  if (whole == info.index_bytes) return info;
  if (whole < info.index_bytes) info = Info{};  // Replaced by a shorter file: start over.
  // Only the records added since the last look (index files only grow).
  while (info.index_bytes < whole) {
    const int64_t to = std::min(whole, info.index_bytes + kIndexBlock);
    absl::StatusOr<std::string> bytes = ReadIndex(day_fd, n, info.index_bytes, to);
    if (!bytes.ok() || bytes->empty()) break;
    for (size_t at = 0; at < bytes->size(); at += IndexRecord::kSize) {
      IndexRecord r;
      if (!DecodeIndexRecord(absl::string_view(*bytes).substr(at, IndexRecord::kSize), &r)) {
        continue;
      }
      info.min_run = std::min(info.min_run, r.run_id);
      info.max_run = std::max(info.max_run, r.run_id);
    }
    info.index_bytes += static_cast<int64_t>(bytes->size());
  }
  absl::MutexLock lock(&info_mu_);
  Info& cached = info_[day][n];
  // Another reader may have got further meanwhile; an own segment is never replaced.
  if (!cached.own && cached.index_bytes <= info.index_bytes) cached = info;
  return info;
}

absl::StatusOr<std::vector<LogChunk>> LogSegments::Chunks(int day_fd, absl::string_view day,
                                                          int64_t run_id) {
  absl::StatusOr<std::vector<uint32_t>> segments = ListSegments(day_fd, /*all=*/false);
  if (!segments.ok()) return segments.status();
  std::vector<LogChunk> out;
  for (uint32_t n : *segments) {
    const Info info = Refresh(day_fd, day, n);
    if (info.index_bytes == 0 || run_id < info.min_run || run_id > info.max_run) continue;
    std::vector<LogChunk> found;  // This segment's chunks of the run.
    for (int64_t from = 0; from < info.index_bytes; from += kIndexBlock) {
      absl::StatusOr<std::string> bytes =
          ReadIndex(day_fd, n, from, std::min(info.index_bytes, from + kIndexBlock));
      if (!bytes.ok() || bytes->empty()) break;  // Unreadable or shrunk: what was read counts.
      for (size_t at = 0; at < bytes->size(); at += IndexRecord::kSize) {
        IndexRecord r;
        if (!DecodeIndexRecord(absl::string_view(*bytes).substr(at, IndexRecord::kSize), &r) ||
            r.run_id != run_id) {
          continue;
        }
        if (r.tombstone()) {
          auto discard = [&](const LogChunk& c) { return AtOrAfter(c, r.segment, r.offset); };
          out.erase(std::remove_if(out.begin(), out.end(), discard), out.end());
          found.erase(std::remove_if(found.begin(), found.end(), discard), found.end());
        } else {
          found.push_back(LogChunk{n, r.offset, r.length});
        }
      }
    }
    if (found.empty()) continue;
    // Records pointing past the data file's end (its data was lost in a crash) are ignored.
    const std::string data_name = SegmentDataName(n);
    struct stat st;
    if (::fstatat(day_fd, data_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode)) {
      continue;
    }
    for (const LogChunk& c : found) {
      if (c.length <= st.st_size - c.offset) out.push_back(c);
    }
  }
  return out;
}

absl::StatusOr<int64_t> LogSegments::MaxRunId(int day_fd, absl::string_view day) {
  absl::StatusOr<std::vector<uint32_t>> segments = ListSegments(day_fd, /*all=*/false);
  if (!segments.ok()) return segments.status();
  int64_t max = 0;
  for (uint32_t n : *segments) {
    const Info info = Refresh(day_fd, day, n);
    if (info.index_bytes > 0) max = std::max(max, info.max_run);
  }
  return max;
}

absl::StatusOr<std::string> LogSegments::ChunkReader::Read(const LogChunk& chunk) {
  if (!fd_.valid() || segment_ != chunk.segment) {
    const std::string name = SegmentDataName(chunk.segment);
    fd_.Reset(::openat(day_fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd_.valid()) return ErrnoError("open", name, errno);
    segment_ = chunk.segment;
  }
  absl::StatusOr<std::string> bytes =
      ReadAt(fd_.get(), chunk.offset, chunk.length, SegmentDataName(chunk.segment));
  if (!bytes.ok()) return bytes;
  {
    absl::MutexLock lock(&segments_->info_mu_);
    segments_->stats_.data_bytes_read += bytes->size();
  }
  if (static_cast<int64_t>(bytes->size()) != chunk.length) {
    return absl::DataLossError(
        absl::StrCat(SegmentDataName(chunk.segment), ": chunk at ", chunk.offset, " cut short"));
  }
  return bytes;
}

LogSegments::Stats LogSegments::stats() const {
  absl::MutexLock lock(&info_mu_);
  return stats_;
}

}  // namespace jobwheel::sdk
