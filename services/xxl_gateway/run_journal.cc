#include "services/xxl_gateway/run_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace jobwheel::xxl {
namespace {

constexpr size_t kHeader = 8;             // Length and CRC-32, little-endian.
constexpr uint32_t kMaxFrame = 64 << 20;  // No run record comes near this.

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

uint32_t Crc(const std::string& bytes) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat("state: ", what, " ", path, ": ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError(std::strerror(n < 0 ? errno : ENOSPC));
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Makes the entry of `path` in its directory durable (after a create or a rename).
void SyncDirOf(const std::string& path) {
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  const int dir_fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return;
  fsync(dir_fd);
  close(dir_fd);
}

bool ReadFile(int fd, std::string* out) {
  char buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

std::string JournalFrame(const RunRecord& record) {
  const std::string payload = record.SerializeAsString();
  std::string frame;
  frame.reserve(kHeader + payload.size());
  PutU32(frame, static_cast<uint32_t>(payload.size()));
  PutU32(frame, Crc(payload));
  frame += payload;
  return frame;
}

RunJournal::~RunJournal() {
  absl::MutexLock lock(&mu_);
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::vector<RunRecord>> RunJournal::Open() {
  std::vector<RunRecord> out;
  if (path_.empty()) return out;
  absl::MutexLock lock(&mu_);
  const int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot open", path_);
  SyncDirOf(path_);  // A journal just created stays there through a machine crash.
  std::string bytes;
  if (!ReadFile(fd, &bytes)) {
    close(fd);
    return Errno("cannot read", path_);
  }
  absl::flat_hash_map<int64_t, RunRecord> latest;
  size_t at = 0;
  while (at + kHeader <= bytes.size()) {
    const uint32_t len = GetU32(bytes.data() + at);
    const uint32_t crc = GetU32(bytes.data() + at + 4);
    if (len > kMaxFrame || at + kHeader + len > bytes.size()) break;
    std::string payload = bytes.substr(at + kHeader, len);
    RunRecord r;
    if (Crc(payload) != crc || !r.ParseFromString(payload) || r.run_id() <= 0) break;
    if (r.forgotten()) {
      latest.erase(r.run_id());
    } else {
      latest[r.run_id()] = std::move(r);
    }
    at += kHeader + len;
  }
  if (at != bytes.size()) {
    spdlog::warn("state: {}: cutting a torn record off at byte {} of {}", path_, at, bytes.size());
    if (ftruncate(fd, static_cast<off_t>(at)) != 0 || fdatasync(fd) != 0) {
      close(fd);
      return Errno("cannot cut the torn end of", path_);
    }
  }
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
  size_ = at;
  synced_ = appended_;
  out.reserve(latest.size());
  for (auto& [id, r] : latest) out.push_back(std::move(r));
  return out;
}

absl::Status RunJournal::WriteLocked(const std::string& bytes) {
  if (fd_ < 0) {
    // Not opened (nothing read): appended after what is there, the last frame still wins.
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd_ < 0) return Errno("cannot open", path_);
    struct stat st;
    size_ = fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }
  if (absl::Status s = WriteAll(fd_, bytes); !s.ok()) {
    // Cut a partial frame off, so that the frames after it are read.
    if (ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
      spdlog::error("state: {}: cannot cut a partial write off: {}", path_, std::strerror(errno));
    }
    return absl::InternalError(absl::StrCat("state: write ", path_, ": ", s.message()));
  }
  size_ += bytes.size();
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RunJournal::AppendFrame(const RunRecord& record) {
  if (path_.empty()) return 0;
  const std::string frame = JournalFrame(record);
  absl::MutexLock lock(&mu_);
  if (absl::Status s = WriteLocked(frame); !s.ok()) return s;
  return ++appended_;
}

absl::StatusOr<uint64_t> RunJournal::Append(const RunRecord& record) { return AppendFrame(record); }

absl::StatusOr<uint64_t> RunJournal::Forget(int64_t run_id) {
  RunRecord gone;
  gone.set_run_id(run_id);
  gone.set_forgotten(true);
  return AppendFrame(gone);
}

absl::Status RunJournal::SyncTo(uint64_t seq) {
  if (path_.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  while (synced_ < seq) {
    if (syncing_) {
      // Another caller's sync is running: it may not cover `seq`; the loop checks again.
      mu_.Await(absl::Condition(
          +[](bool* syncing) { return !*syncing; }, &syncing_));
      continue;
    }
    syncing_ = true;
    const uint64_t target = appended_;
    const int fd = fd_;
    mu_.Unlock();
    const int rc = fdatasync(fd);
    const int err = errno;
    mu_.Lock();
    syncing_ = false;
    ++syncs_;
    if (rc != 0) {
      return absl::InternalError(absl::StrCat("state: sync ", path_, ": ", std::strerror(err)));
    }
    if (target > synced_) synced_ = target;
  }
  return absl::OkStatus();
}

absl::Status RunJournal::Compact(const std::function<std::vector<RunRecord>()>& live) {
  if (path_.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  // fd_ is not closed under a running sync.
  mu_.Await(absl::Condition(
      +[](bool* syncing) { return !*syncing; }, &syncing_));
  std::string bytes;
  for (const RunRecord& r : live()) bytes += JournalFrame(r);
  const std::string tmp = path_ + ".tmp";
  const int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot write", tmp);
  if (absl::Status s = WriteAll(fd, bytes); !s.ok() || fdatasync(fd) != 0) {
    close(fd);
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("state: write ", tmp, ": ", s.message()));
  }
  if (rename(tmp.c_str(), path_.c_str()) != 0) {
    close(fd);
    unlink(tmp.c_str());
    return Errno("cannot rename", tmp);
  }
  SyncDirOf(path_);  // The rename itself durable: later frames go to the new file only.
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
  size_ = bytes.size();
  synced_ = appended_;  // Every record appended so far is in the new file, synced.
  return absl::OkStatus();
}

uint64_t RunJournal::bytes() const {
  absl::MutexLock lock(&mu_);
  return size_;
}

uint64_t RunJournal::syncs() const {
  absl::MutexLock lock(&mu_);
  return syncs_;
}

}  // namespace jobwheel::xxl
