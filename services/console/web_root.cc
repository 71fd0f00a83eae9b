#include "services/console/web_root.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"

namespace jobwheel::console {
namespace {

constexpr absl::string_view kRelative = "jobwheel/services/console/web";

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string DefaultWebRoot(absl::string_view exe_path, absl::string_view runfiles_dir) {
  std::string beside_binary = absl::StrCat(exe_path, ".runfiles/", kRelative);
  if (IsDirectory(beside_binary) || runfiles_dir.empty()) return beside_binary;
  return absl::StrCat(runfiles_dir, "/", kRelative);
}

}  // namespace jobwheel::console
