#ifndef JOBWHEEL_SERVICES_CONSOLE_STATIC_FILES_H_
#define JOBWHEEL_SERVICES_CONSOLE_STATIC_FILES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace jobwheel::console {

// A file to answer with.
struct StaticFile {
  std::string content_type;
  std::string body;
};

// The console's pages: regular files under a web root, read on each request (they are
// small, and a redeployed directory shows at once). No directory listings; a path with a
// "..", ".", empty or hidden (".name") segment, a backslash or a NUL is refused before the
// file system is touched. The check is lexical on purpose: Bazel's runfiles are symlinks
// out of the tree, and the web root itself is trusted. Thread-safe.
class StaticFiles {
 public:
  explicit StaticFiles(std::string web_root);

  // The file for a decoded URL path ("/" and "/dir/" mean their index.html).
  // INVALID_ARGUMENT for an unsafe path, NOT_FOUND for anything else not served.
  absl::StatusOr<StaticFile> Read(absl::string_view url_path) const;

  // The path under the web root that `url_path` names, or INVALID_ARGUMENT if unsafe.
  static absl::StatusOr<std::string> RelativePath(absl::string_view url_path);

  // The Content-Type of a file by its extension; application/octet-stream if unknown.
  static absl::string_view ContentType(absl::string_view file_name);

  const std::string& web_root() const { return web_root_; }

 private:
  const std::string web_root_;
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_STATIC_FILES_H_
