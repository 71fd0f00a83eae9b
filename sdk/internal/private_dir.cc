#include "sdk/internal/private_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace jobwheel::sdk {
namespace {

namespace fs = std::filesystem;

absl::Status Refuse(absl::string_view what, const std::string& path, absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(what, " ", path, ": ", why));
}

}  // namespace

absl::Status MakePrivateDir(const std::string& path, absl::string_view what) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": must not be empty"));
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec).lexically_normal();
  if (ec) return Refuse(what, path, ec.message());
  // Create the missing components, outermost first, each 0700.
  std::vector<fs::path> missing;
  for (fs::path p = absolute; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    struct stat st;
    if (::lstat(p.c_str(), &st) == 0) break;
    if (errno != ENOENT) return Refuse(what, p.string(), std::strerror(errno));
    missing.push_back(p);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      return Refuse(what, it->string(), absl::StrCat("cannot create: ", std::strerror(errno)));
    }
  }
  // Check the real directory and every real ancestor (symlinks in the given path resolved).
  const fs::path real = fs::canonical(absolute, ec);
  if (ec) return Refuse(what, path, ec.message());
  const uid_t me = ::geteuid();
  struct stat st;
  if (::stat(real.c_str(), &st) != 0) return Refuse(what, real.string(), std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return Refuse(what, real.string(), "not a directory");
  if (st.st_uid != me) {
    return Refuse(what, real.string(),
                  absl::StrFormat("owned by uid %d, not by this process's uid %d: refusing to "
                                  "keep run data in another user's directory",
                                  st.st_uid, me));
  }
  if ((st.st_mode & 077) != 0) {
    spdlog::warn("{} {}: mode {:o} lets other users in; narrowing it to 0700", std::string(what),
                 real.string(), st.st_mode & 0777);
    if (::chmod(real.c_str(), 0700) != 0) {
      return Refuse(what, real.string(), absl::StrCat("chmod 0700: ", std::strerror(errno)));
    }
  }
  for (fs::path p = real.parent_path(); !p.empty(); p = p.parent_path()) {
    if (::stat(p.c_str(), &st) != 0) return Refuse(what, p.string(), std::strerror(errno));
    if (st.st_uid != me && st.st_uid != 0) {
      return Refuse(what, real.string(),
                    absl::StrFormat("its ancestor %s is owned by uid %d (neither this user nor "
                                    "root), who could replace what is inside",
                                    p.string(), st.st_uid));
    }
    // Writable by others without the sticky bit lets them rename what is inside. Only a
    // warning: a Kubernetes emptyDir is created 0777 (2777 with fsGroup), and in a pod no
    // other user shares it.
    if ((st.st_mode & 022) != 0 && (st.st_mode & S_ISVTX) == 0) {
      spdlog::warn(
          "{} {}: its ancestor {} is writable by other users (mode {:o}) and not sticky; "
          "another local user could replace {}",
          std::string(what), real.string(), p.string(), st.st_mode & 07777, real.string());
    }
    if (p == p.root_path()) break;
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::sdk
