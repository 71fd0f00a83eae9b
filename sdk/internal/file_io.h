#ifndef JOBWHEEL_SDK_INTERNAL_FILE_IO_H_
#define JOBWHEEL_SDK_INTERNAL_FILE_IO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace jobwheel::sdk {

// The file helpers of the executor's files (run logs, result spool, scripts): POSIX calls
// retried on EINTR and short transfers, errors as INTERNAL statuses naming the file.

// A file descriptor closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

// INTERNAL "<what> <name>: <strerror(err)>".
absl::Status ErrnoError(absl::string_view what, absl::string_view name, int err);

// Writes all of `data` to `fd` — at `offset` (pwrite) when it is not negative, else at the
// file position — continuing after short writes and EINTR. INTERNAL naming `path` and the
// errno on failure (part of `data` may have been written).
absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path, int64_t offset = -1);

// Reads up to `length` bytes at `offset` (pread); fewer only at the end of the file.
absl::StatusOr<std::string> ReadAt(int fd, int64_t offset, int64_t length, absl::string_view name);

// Reads up to `size` bytes at the file position into `buffer`, retrying on EINTR: the count
// read, 0 at the end of the file, -1 on error (errno set).
ssize_t ReadSome(int fd, char* buffer, size_t size);

// The whole content of the file at `path`.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Makes the directory's entries (files created, renamed or removed in it) durable.
absl::Status FsyncDir(const std::string& dir);

// Replaces (or creates) `path` with `data` atomically: written to "<path>.tmp" (mode `mode`,
// O_EXCL, not following symlinks), made durable, renamed over `path`, and the directory
// synced. Readers see the old content or the new one, never a part. A stale .tmp left by a
// crash is removed first.
absl::Status ReplaceFile(const std::string& path, absl::string_view data, int mode = 0600);

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_FILE_IO_H_
