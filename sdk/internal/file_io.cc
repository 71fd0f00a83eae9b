#include "sdk/internal/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace jobwheel::sdk {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) Reset(other.Release());
  return *this;
}

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

absl::Status ErrnoError(absl::string_view what, absl::string_view name, int err) {
  return absl::InternalError(absl::StrCat(what, " ", name, ": ", std::strerror(err)));
}

absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path, int64_t offset) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = offset < 0
                          ? ::write(fd, data.data() + done, data.size() - done)
                          : ::pwrite(fd, data.data() + done, data.size() - done,
                                     static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", path, errno);
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadAt(int fd, int64_t offset, int64_t length, absl::string_view name) {
  std::string out(static_cast<size_t>(length), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, &out[done], out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("read", name, errno);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

ssize_t ReadSome(int fd, char* buffer, size_t size) {
  ssize_t n;
  do {
    n = ::read(fd, buffer, size);
  } while (n < 0 && errno == EINTR);
  return n;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open", path, errno);
  std::string out;
  char block[64 * 1024];
  while (true) {
    const ssize_t n = ReadSome(fd.get(), block, sizeof(block));
    if (n < 0) return ErrnoError("read", path, errno);
    if (n == 0) return out;
    out.append(block, static_cast<size_t>(n));
  }
}

absl::Status FsyncDir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open", dir, errno);
  if (::fsync(fd.get()) != 0) return ErrnoError("fsync", dir, errno);
  return absl::OkStatus();
}

absl::Status ReplaceFile(const std::string& path, absl::string_view data, int mode) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return ErrnoError("create", tmp, errno);
  absl::Status st = WriteAll(fd.get(), data, tmp);
  if (st.ok() && ::fsync(fd.get()) != 0) st = ErrnoError("fsync", tmp, errno);
  fd.Reset();
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = ErrnoError("rename", tmp, errno);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  const size_t slash = path.rfind('/');
  return FsyncDir(slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash));
}

}  // namespace jobwheel::sdk
