#ifndef JOBWHEEL_SERVICES_CONSOLE_WEB_ROOT_H_
#define JOBWHEEL_SERVICES_CONSOLE_WEB_ROOT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace jobwheel::console {

// Where the pages are when --web_root is not given: the runfiles copy of
// services/console/web that Bazel builds next to the binary
// (`<exe>.runfiles/jobwheel/services/console/web`), so `bazel-bin/services/console/console`
// finds them from any directory; failing that, the one under `runfiles_dir` ($RUNFILES_DIR,
// set when Bazel runs a test or `bazel run`). `exe_path` is the binary's real path
// (/proc/self/exe).
std::string DefaultWebRoot(absl::string_view exe_path, absl::string_view runfiles_dir);

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_WEB_ROOT_H_
