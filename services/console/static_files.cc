#include "services/console/static_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace jobwheel::console {
namespace {

constexpr size_t kMaxPathBytes = 1024;
constexpr size_t kMaxFileBytes = 32 << 20;

}  // namespace

StaticFiles::StaticFiles(std::string web_root) : web_root_(std::move(web_root)) {}

absl::StatusOr<std::string> StaticFiles::RelativePath(absl::string_view url_path) {
  if (url_path.empty() || url_path[0] != '/') {
    return absl::InvalidArgumentError("path must start with /");
  }
  if (url_path.size() > kMaxPathBytes) return absl::InvalidArgumentError("path too long");
  if (absl::StrContains(url_path, '\\') || absl::StrContains(url_path, '\0')) {
    return absl::InvalidArgumentError("path contains a backslash or NUL");
  }
  std::vector<absl::string_view> segments = absl::StrSplit(url_path.substr(1), '/');
  // "/" and "/dir/" end in an empty segment: the directory's index.html.
  if (segments.back().empty()) segments.back() = "index.html";
  for (absl::string_view segment : segments) {
    if (segment.empty()) return absl::InvalidArgumentError("path has an empty segment");
    // Also refuses "." and "..": nothing above or beside the web root, no dotfiles.
    if (segment[0] == '.') {
      return absl::InvalidArgumentError("path has a segment starting with '.'");
    }
  }
  return absl::StrJoin(segments, "/");
}

absl::string_view StaticFiles::ContentType(absl::string_view file_name) {
  static constexpr std::pair<absl::string_view, absl::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".txt", "text/plain; charset=utf-8"},
      {".map", "application/json"},
  };
  const std::string lower = absl::AsciiStrToLower(file_name);
  for (const auto& [extension, type] : kTypes) {
    if (absl::EndsWith(lower, extension)) return type;
  }
  return "application/octet-stream";
}

absl::StatusOr<StaticFile> StaticFiles::Read(absl::string_view url_path) const {
  absl::StatusOr<std::string> relative = RelativePath(url_path);
  if (!relative.ok()) return relative.status();
  const std::string path = absl::StrCat(web_root_, "/", *relative);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(url_path, ": not found"));
  struct stat st;
  // Directories without the trailing slash are not listed either.
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<size_t>(st.st_size) > kMaxFileBytes) {
    close(fd);
    return absl::NotFoundError(absl::StrCat(url_path, ": not found"));
  }
  StaticFile file;
  file.content_type = std::string(ContentType(*relative));
  file.body.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < file.body.size()) {
    const ssize_t n = read(fd, file.body.data() + done, file.body.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  file.body.resize(done);
  return file;
}

}  // namespace jobwheel::console
