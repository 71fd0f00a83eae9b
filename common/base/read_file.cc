#include "common/base/read_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace jobwheel {

absl::StatusOr<std::string> ReadFileToString(const std::string& path, absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, ": cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(what, ": cannot read ", path));
  return ss.str();
}

}  // namespace jobwheel
