#include "sdk/internal/run_log.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"

namespace jobwheel::sdk {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxPageBytes = 1 << 20;

std::string DayFolder(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d", t, absl::UTCTimeZone());
}

bool ParseDayFolder(absl::string_view name, absl::CivilDay* day) {
  if (name.size() != 10) return false;
  return absl::ParseCivilTime(name, day);
}

std::string LogName(int64_t run_id) { return absl::StrCat(run_id, ".log"); }

}  // namespace

absl::StatusOr<std::shared_ptr<RunLogFile>> RunLogFile::Open(const std::string& path,
                                                             const Clock& clock,
                                                             bool* created) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (created != nullptr) *created = fd >= 0;
  if (fd < 0 && errno == EEXIST) fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("open ", path, ": ", std::strerror(errno)));
  }
  return std::shared_ptr<RunLogFile>(new RunLogFile(path, fd, clock));
}

RunLogFile::~RunLogFile() { ::close(fd_); }

void RunLogFile::Append(absl::string_view text) {
  const std::string stamp =
      absl::FormatTime("%Y-%m-%d %H:%M:%E3S ", clock_.Now(), absl::UTCTimeZone());
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
  absl::MutexLock lock(&mu_);
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::write(fd_, out.data() + done, out.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // A full disk must not fail the run; the line is lost.
    }
    done += static_cast<size_t>(n);
  }
}

RunLogStore::RunLogStore(std::string log_dir, const Clock& clock)
    : dir_(std::move(log_dir)), clock_(clock) {}

absl::Status RunLogStore::Init() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return absl::InternalError(absl::StrCat("log_dir ", dir_, ": ", ec.message()));
  fs::path canonical = fs::canonical(dir_, ec);
  if (ec) return absl::InternalError(absl::StrCat("log_dir ", dir_, ": ", ec.message()));
  canonical_dir_ = canonical.string();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<RunLogFile>> RunLogStore::Create(int64_t run_id, bool* created) {
  if (run_id <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  const std::string day = DayFolder(clock_.Now());
  const fs::path folder = fs::path(canonical_dir_) / day;
  bool made;
  {
    absl::MutexLock lock(&mu_);
    made = made_day_ == day;
  }
  if (!made) {
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat("log folder ", folder.string(), ": ", ec.message()));
    }
    absl::MutexLock lock(&mu_);
    made_day_ = day;
  }
  const std::string path = (folder / LogName(run_id)).string();
  auto file = RunLogFile::Open(path, clock_, created);
  if (!file.ok() && made) {
    // The folder may have been removed meanwhile (retention): make it again once.
    {
      absl::MutexLock lock(&mu_);
      made_day_.clear();
    }
    return Create(run_id, created);
  }
  if (!file.ok()) return file.status();
  absl::MutexLock lock(&mu_);
  if (days_.insert_or_assign(run_id, day).second) {
    days_order_.push_back(run_id);
    while (days_order_.size() > kRememberedDays) {
      days_.erase(days_order_.front());
      days_order_.pop_front();
    }
  }
  return file;
}

void RunLogStore::Remove(int64_t run_id) {
  std::string day;
  {
    absl::MutexLock lock(&mu_);
    auto it = days_.find(run_id);
    if (it == days_.end()) return;
    day = it->second;
    days_.erase(it);  // Its days_order_ entry goes when it reaches the front.
  }
  std::error_code ec;
  fs::remove(fs::path(canonical_dir_) / day / LogName(run_id), ec);
}

absl::StatusOr<std::string> RunLogStore::Find(int64_t run_id) {
  {
    absl::MutexLock lock(&mu_);
    auto it = days_.find(run_id);
    if (it != days_.end()) {
      return (fs::path(canonical_dir_) / it->second / LogName(run_id)).string();
    }
  }
  // A run from an earlier process: look through the day folders, newest first.
  std::error_code ec;
  std::vector<std::string> days;
  for (fs::directory_iterator it(canonical_dir_, ec), end; !ec && it != end; it.increment(ec)) {
    absl::CivilDay day;
    const std::string name = it->path().filename().string();
    if (ParseDayFolder(name, &day)) days.push_back(name);
  }
  std::sort(days.rbegin(), days.rend());
  for (const std::string& day : days) {
    fs::path candidate = fs::path(canonical_dir_) / day / LogName(run_id);
    if (fs::exists(fs::symlink_status(candidate, ec))) return candidate.string();
  }
  return absl::NotFoundError(absl::StrCat("run ", run_id, ": no log on this executor"));
}

absl::Status RunLogStore::CheckInside(const std::string& path) const {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) {
    return absl::NotFoundError(absl::StrCat("log ", path, ": ", std::strerror(errno)));
  }
  absl::string_view r(resolved);
  const std::string prefix = canonical_dir_ + "/";
  if (r.size() <= prefix.size() || r.substr(0, prefix.size()) != prefix) {
    return absl::PermissionDeniedError("run log resolves outside the log directory");
  }
  return absl::OkStatus();
}

absl::StatusOr<RunLogStore::Page> RunLogStore::Read(int64_t run_id, int from_line,
                                                    int max_lines) {
  if (run_id <= 0) return absl::InvalidArgumentError("run_id: must be positive");
  if (from_line < 1) from_line = 1;
  if (max_lines < 1) max_lines = 1;
  auto path = Find(run_id);
  if (!path.ok()) return path.status();
  absl::Status inside = CheckInside(*path);
  if (absl::IsNotFound(inside)) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, ": no log on this executor"));
  }
  if (!inside.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("run ", run_id, ": log path resolves outside the log directory"));
  }
  std::ifstream in(*path);
  if (!in) return absl::NotFoundError(absl::StrCat("run ", run_id, ": no log on this executor"));
  Page page;
  page.from_line = from_line;
  page.to_line = from_line - 1;
  std::string line;
  int number = 0;
  size_t bytes = 0;
  while (true) {
    if (!std::getline(in, line)) {
      page.eof = true;
      break;
    }
    // A last line without '\n' is still being written: leave it for the next page.
    if (in.eof()) {
      page.eof = true;
      break;
    }
    ++number;
    if (number < from_line) continue;
    bytes += line.size();
    page.lines.push_back(std::move(line));
    page.to_line = number;
    if (static_cast<int>(page.lines.size()) >= max_lines || bytes >= kMaxPageBytes) {
      page.eof = in.peek() == std::char_traits<char>::eof();
      break;
    }
  }
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
  }
  if (!old.empty()) {
    absl::MutexLock lock(&mu_);
    for (auto it = days_.begin(); it != days_.end();) {
      if (std::find(old.begin(), old.end(), it->second) != old.end()) {
        days_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  return removed;
}

}  // namespace jobwheel::sdk
