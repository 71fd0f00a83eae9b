#ifndef JOBWHEEL_SDK_INTERNAL_PRIVATE_DIR_H_
#define JOBWHEEL_SDK_INTERNAL_PRIVATE_DIR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace jobwheel::sdk {

// Makes `path` a directory only this process's user can use, for run logs, the result spool,
// script sources and script work directories:
//  - each missing component is created with mode 0700 (mkdir's mode, never chmod after);
//  - the directory itself must be owned by this user; an existing one with group or other
//    permission bits (made by hand, or by another tool) is narrowed to 0700, with a warning;
//  - no ancestor may belong to another user (who could swap a component): each must be
//    owned by this user or root. One writable by group or others without the sticky bit
//    (unlike /tmp) is logged as a warning, not refused: a Kubernetes emptyDir is 0777.
// So a predictable path such as /tmp/jobwheel-executor-7200 is safe: a directory another
// user planted there is refused (FAILED_PRECONDITION naming `what`, the path and the owner),
// never used. Not thread-safe with respect to concurrent changes by this same user.
absl::Status MakePrivateDir(const std::string& path, absl::string_view what);

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_PRIVATE_DIR_H_
