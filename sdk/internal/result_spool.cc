#include "sdk/internal/result_spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "sdk/internal/byte_codec.h"
#include "sdk/internal/file_io.h"
#include "sdk/internal/private_dir.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kLegacySuffix = ".result";
constexpr absl::string_view kSegmentPrefix = "journal-";
constexpr absl::string_view kSegmentSuffix = ".log";

// A record: u32 payload length, u32 checksum of (kind, payload), u8 kind, payload.
constexpr size_t kHeader = 9;
constexpr uint8_t kPut = 1;     // Payload: a serialized RunResult.
constexpr uint8_t kRemove = 2;  // Payload: the run id, 8 bytes little-endian.

void PutU32(char* p, uint32_t v) { PutLittleEndian(p, v, 4); }
uint32_t GetU32(const char* p) { return static_cast<uint32_t>(GetLittleEndian(p, 4)); }

std::string Encode(uint8_t kind, absl::string_view payload) {
  std::string r(kHeader + payload.size(), '\0');
  PutU32(&r[0], static_cast<uint32_t>(payload.size()));
  r[8] = static_cast<char>(kind);
  std::memcpy(&r[kHeader], payload.data(), payload.size());
  PutU32(&r[4], Fnv1a(absl::string_view(r).substr(8)));
  return r;
}

std::string RunIdBytes(int64_t run_id) {
  std::string b(8, '\0');
  PutLittleEndian(&b[0], static_cast<uint64_t>(run_id), 8);
  return b;
}

int64_t RunIdFromBytes(absl::string_view b) {
  return static_cast<int64_t>(GetLittleEndian(b.data(), 8));
}

absl::Status Errno(absl::string_view what, const std::string& path) {
  return ErrnoError(what, path, errno);
}

// The segment number of a journal file name, or 0.
uint64_t SegmentNumber(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kSegmentPrefix) || !absl::ConsumeSuffix(&name, kSegmentSuffix)) {
    return 0;
  }
  uint64_t n = 0;
  return absl::SimpleAtoi(name, &n) ? n : 0;
}

}  // namespace

ResultSpool::ResultSpool(std::string dir, size_t max_segment_bytes)
    : dir_(std::move(dir)), max_segment_bytes_(max_segment_bytes) {}

ResultSpool::~ResultSpool() {
  absl::MutexLock lock(&mu_);
  if (fd_ >= 0) ::close(fd_);
}

absl::Status ResultSpool::Init() {
  if (absl::Status s = MakePrivateDir(dir_, "spool_dir"); !s.ok()) return s;
  std::error_code ec;
  // Temp files of the one-file-per-run format left by a crash were never complete: drop them.
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (absl::EndsWith(it->path().filename().string(), ".tmp")) {
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
  return absl::OkStatus();
}

std::string ResultSpool::SegmentPath(uint64_t seq) const {
  return absl::StrFormat("%s/%s%020d%s", dir_, kSegmentPrefix, seq, kSegmentSuffix);
}

size_t ResultSpool::segments() const {
  size_t n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (SegmentNumber(it->path().filename().string()) > 0) ++n;
  }
  return n;
}

absl::Status ResultSpool::OpenSegmentLocked() {
  uint64_t next = segment_ + 1;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    next = std::max(next, SegmentNumber(it->path().filename().string()) + 1);
  }
  const std::string path = SegmentPath(next);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Errno("open", path);
  // The new file's directory entry must be durable before anything in it counts as synced.
  absl::Status st = FsyncDir(dir_);
  if (!st.ok()) {
    ::close(fd);
    ::unlink(path.c_str());
    return st;
  }
  fd_ = fd;
  segment_ = next;
  segment_bytes_ = 0;
  appended_ = 0;
  synced_ = 0;
  live_per_segment_.emplace(segment_, 0);
  return absl::OkStatus();
}

absl::Status ResultSpool::AppendLocked(const std::string& record) {
  if (fd_ >= 0 && segment_bytes_ > 0 && segment_bytes_ + record.size() > max_segment_bytes_) {
    // Roll over: the old segment is synced whole first, so whoever waits for a sync of it is
    // done once the segment number changes. A sync running outside the lock uses fd_.
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !syncing_; };
    mu_.Await(absl::Condition(&idle));
    if (::fdatasync(fd_) != 0) return Errno("fdatasync", SegmentPath(segment_));
    synced_ = appended_;
    ::close(fd_);
    fd_ = -1;
    synced_cv_.SignalAll();
  }
  if (fd_ < 0) {
    absl::Status st = OpenSegmentLocked();
    if (!st.ok()) return st;
  }
  absl::Status st = WriteAll(fd_, record, SegmentPath(segment_));
  if (!st.ok()) {
    // Cut a partial record off, or the records after it would be unreadable.
    if (::ftruncate(fd_, static_cast<off_t>(segment_bytes_)) != 0) {
      spdlog::error("result spool: cannot truncate {} after a failed write", SegmentPath(segment_));
    }
    return st;
  }
  segment_bytes_ += record.size();
  ++appended_;
  return absl::OkStatus();
}

absl::Status ResultSpool::Put(const jobwheel::v1::RunResult& result) {
  absl::Status st = Append(result);
  if (!st.ok()) return st;
  return Sync();
}

absl::Status ResultSpool::Append(const jobwheel::v1::RunResult& result) {
  if (result.run_id() <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  std::string payload;
  if (!result.SerializeToString(&payload)) {
    return absl::InternalError(absl::StrCat("run ", result.run_id(), ": cannot serialize result"));
  }
  const std::string record = Encode(kPut, payload);
  absl::MutexLock lock(&mu_);
  absl::Status st = AppendLocked(record);
  if (!st.ok()) return st;
  auto [it, inserted] = where_.try_emplace(result.run_id(), segment_);
  if (!inserted) {
    --live_per_segment_[it->second];  // Superseded by this record.
    it->second = segment_;
  }
  ++live_per_segment_[segment_];
  return absl::OkStatus();
}

absl::Status ResultSpool::Sync() {
  absl::MutexLock lock(&mu_);
  if (fd_ < 0) return absl::OkStatus();
  return WaitSyncedLocked(segment_, appended_);
}

absl::Status ResultSpool::WaitSyncedLocked(uint64_t segment, uint64_t record) {
  // Group commit: the first waiter syncs everything appended so far; the others wait for it.
  // A segment that rolled over meanwhile was synced whole by the roll-over.
  while (segment_ == segment && synced_ < record) {
    if (syncing_) {
      synced_cv_.Wait(&mu_);
      continue;
    }
    syncing_ = true;
    const uint64_t target = appended_;
    const int fd = fd_;
    mu_.Unlock();
    const int rc = ::fdatasync(fd);
    const int err = errno;
    mu_.Lock();
    syncing_ = false;
    synced_cv_.SignalAll();
    if (rc != 0) {
      errno = err;
      return Errno("fdatasync", SegmentPath(segment));
    }
    if (segment_ == segment) synced_ = std::max(synced_, target);
  }
  return absl::OkStatus();
}

absl::Status ResultSpool::Remove(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  auto it = where_.find(run_id);
  if (it == where_.end()) return absl::OkStatus();
  // Not synced: if the tombstone is lost, the result is sent again and ignored as a duplicate.
  absl::Status st = AppendLocked(Encode(kRemove, RunIdBytes(run_id)));
  if (!st.ok()) return st;
  --live_per_segment_[it->second];
  where_.erase(it);
  DropDeadSegmentsLocked();
  return absl::OkStatus();
}

void ResultSpool::DropDeadSegmentsLocked() {
  // Oldest first only: a segment's tombstones may refer to results in older segments, which
  // must be gone before the tombstones are.
  while (!live_per_segment_.empty()) {
    auto oldest = live_per_segment_.begin();
    if (oldest->first == segment_ || oldest->second > 0) return;
    const std::string path = SegmentPath(oldest->first);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("result spool: cannot delete {}: {}", path, std::strerror(errno));
      return;
    }
    live_per_segment_.erase(oldest);
  }
}

absl::Status ResultSpool::ReadAllLocked(std::map<int64_t, jobwheel::v1::RunResult>* live,
                                        std::vector<std::string>* legacy_files,
                                        std::vector<uint64_t>* bad_segments) {
  std::error_code ec;
  std::vector<fs::path> legacy;
  std::vector<uint64_t> segments;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (const uint64_t n = SegmentNumber(name); n > 0) {
      segments.push_back(n);
      continue;
    }
    if (!absl::EndsWith(name, kLegacySuffix)) continue;
    int64_t run_id = 0;
    if (absl::SimpleAtoi(absl::string_view(name).substr(0, name.size() - kLegacySuffix.size()),
                         &run_id)) {
      legacy.push_back(it->path());
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("spool_dir ", dir_, ": ", ec.message()));
  std::sort(legacy.begin(), legacy.end());
  std::sort(segments.begin(), segments.end());

  // The one-file-per-run format of earlier versions: older than any journal record.
  for (const fs::path& file : legacy) {
    absl::StatusOr<std::string> data = ReadFile(file.string());
    jobwheel::v1::RunResult result;
    if (!data.ok() || !result.ParseFromString(*data) || result.run_id() <= 0) {
      spdlog::error("spool: unreadable result file {}; moved aside as .bad", file.string());
      std::error_code rn;
      fs::rename(file, file.string() + ".bad", rn);
      continue;
    }
    legacy_files->push_back(file.string());
    (*live)[result.run_id()] = std::move(result);
  }

  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string path = SegmentPath(segments[i]);
    // An unreadable segment reads as empty (like a missing one).
    std::string data = ReadFile(path).value_or(std::string());
    size_t pos = 0;
    bool torn = false;
    while (pos < data.size()) {
      if (data.size() - pos < kHeader) {
        torn = true;
        break;
      }
      const uint32_t len = GetU32(&data[pos]);
      if (data.size() - pos - kHeader < len ||
          GetU32(&data[pos + 4]) != Fnv1a(absl::string_view(data).substr(pos + 8, 1 + len))) {
        torn = true;
        break;
      }
      const uint8_t kind = static_cast<uint8_t>(data[pos + 8]);
      const absl::string_view payload = absl::string_view(data).substr(pos + kHeader, len);
      if (kind == kPut) {
        jobwheel::v1::RunResult result;
        if (result.ParseFromArray(payload.data(), static_cast<int>(payload.size())) &&
            result.run_id() > 0) {
          (*live)[result.run_id()] = std::move(result);
        }
      } else if (kind == kRemove && payload.size() == 8) {
        live->erase(RunIdFromBytes(payload));
      }
      pos += kHeader + len;
    }
    if (torn) {
      // At the end of the newest segment: a Put interrupted by a crash (it never returned).
      // Anywhere else the rest of the segment is lost: keep it aside for inspection.
      const bool newest = i + 1 == segments.size();
      if (!newest) bad_segments->push_back(segments[i]);
      if (newest) {
        spdlog::info("result spool: {} ends in a write cut short by a crash (byte {} of {})", path,
                     pos, data.size());
      } else {
        spdlog::error("result spool: {} unreadable from byte {} of {}; set aside as .bad", path,
                      pos, data.size());
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<jobwheel::v1::RunResult>> ResultSpool::LoadAll() {
  absl::MutexLock lock(&mu_);
  std::map<int64_t, jobwheel::v1::RunResult> live;
  std::vector<std::string> legacy_files;
  std::vector<uint64_t> bad_segments;
  absl::Status st = ReadAllLocked(&live, &legacy_files, &bad_segments);
  if (!st.ok()) return st;

  if (!loaded_) {
    // First load (at start): rewrite what is live into a fresh segment, then drop the rest.
    loaded_ = true;
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !syncing_; };
    mu_.Await(absl::Condition(&idle));
    std::vector<uint64_t> old;
    std::error_code ec;
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
      if (const uint64_t n = SegmentNumber(it->path().filename().string()); n > 0) old.push_back(n);
    }
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
    where_.clear();
    live_per_segment_.clear();
    st = OpenSegmentLocked();
    if (!st.ok()) return st;
    for (const auto& [run_id, result] : live) {
      std::string payload;
      result.SerializeToString(&payload);
      st = AppendLocked(Encode(kPut, payload));
      if (!st.ok()) return st;
      where_[run_id] = segment_;
      ++live_per_segment_[segment_];
    }
    if (::fdatasync(fd_) != 0) return Errno("fdatasync", SegmentPath(segment_));
    synced_ = appended_;
    for (uint64_t n : old) {
      const std::string path = SegmentPath(n);
      if (std::find(bad_segments.begin(), bad_segments.end(), n) != bad_segments.end()) {
        std::error_code rn;
        fs::rename(path, path + ".bad", rn);
      } else {
        ::unlink(path.c_str());
      }
    }
    for (const std::string& f : legacy_files) ::unlink(f.c_str());
    (void)FsyncDir(dir_);
  }

  std::vector<jobwheel::v1::RunResult> out;
  out.reserve(live.size());
  for (auto& [run_id, result] : live) out.push_back(std::move(result));
  return out;
}

}  // namespace jobwheel::sdk
