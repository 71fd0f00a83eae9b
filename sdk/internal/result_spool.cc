#include "sdk/internal/result_spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kSuffix = ".result";

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write", path);
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Errno("fsync", dir);
  return absl::OkStatus();
}

}  // namespace

ResultSpool::ResultSpool(std::string dir) : dir_(std::move(dir)) {}

absl::Status ResultSpool::Init() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return absl::InternalError(absl::StrCat("spool_dir ", dir_, ": ", ec.message()));
  // Temp files left by a crash in the middle of Put() are incomplete: drop them.
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (absl::EndsWith(it->path().filename().string(), ".tmp")) {
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
  return absl::OkStatus();
}

std::string ResultSpool::PathFor(int64_t run_id) const {
  return absl::StrCat(dir_, "/", run_id, kSuffix);
}

absl::Status ResultSpool::Put(const jobwheel::v1::RunResult& result) {
  if (result.run_id() <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  static std::atomic<uint64_t> counter{0};
  const std::string path = PathFor(result.run_id());
  const std::string tmp = absl::StrCat(path, ".", ::getpid(), ".", counter.fetch_add(1), ".tmp");
  std::string data;
  if (!result.SerializeToString(&data)) {
    return absl::InternalError(absl::StrCat("run ", result.run_id(), ": cannot serialize result"));
  }
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open", tmp);
  absl::Status st = WriteAll(fd, data, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = Errno("fsync", tmp);
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = Errno("rename", tmp);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return FsyncDir(dir_);
}

absl::Status ResultSpool::Remove(int64_t run_id) {
  const std::string path = PathFor(run_id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("unlink", path);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<jobwheel::v1::RunResult>> ResultSpool::LoadAll() {
  std::vector<jobwheel::v1::RunResult> out;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!absl::EndsWith(name, kSuffix)) continue;
    int64_t run_id = 0;
    if (!absl::SimpleAtoi(absl::string_view(name).substr(0, name.size() - kSuffix.size()),
                          &run_id)) {
      continue;
    }
    files.push_back(it->path());
  }
  if (ec) return absl::InternalError(absl::StrCat("spool_dir ", dir_, ": ", ec.message()));
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    jobwheel::v1::RunResult result;
    if (!in || !result.ParseFromString(ss.str()) || result.run_id() <= 0) {
      spdlog::error("spool: unreadable result file {}; moved aside as .bad", file.string());
      std::error_code rn;
      fs::rename(file, file.string() + ".bad", rn);
      continue;
    }
    out.push_back(std::move(result));
  }
  return out;
}

}  // namespace jobwheel::sdk
