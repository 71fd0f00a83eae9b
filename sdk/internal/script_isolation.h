#ifndef JOBWHEEL_SDK_INTERNAL_SCRIPT_ISOLATION_H_
#define JOBWHEEL_SDK_INTERNAL_SCRIPT_ISOLATION_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

// How a script job is kept away from the executor's credentials and private data. The plan is
// computed in the executor (PlanIsolation); the forked child only makes system calls
// (ApplyIsolation) between fork and exec.
namespace jobwheel::sdk {

enum class ScriptIsolation {
  // The script runs as the executor's user and sees what it sees. Only for tests of the
  // runner itself; an Executor never runs scripts so.
  kNone,
  // The executor runs as root: the child enters a new mount namespace, hides the hidden paths,
  // then drops to the script user (setgroups/setgid/setuid, never uid or gid 0).
  kSwitchUser,
  // The executor does not run as root: the child enters a new user and mount namespace that
  // maps only the executor's uid and gid, then hides the hidden paths. The script keeps the
  // executor's uid (see docs/security.md for what that leaves).
  kUserNamespace,
};

// kSwitchUser when this process runs as root, kUserNamespace otherwise.
ScriptIsolation DefaultScriptIsolation();
absl::string_view ScriptIsolationName(ScriptIsolation isolation);

// Who scripts run as under kSwitchUser.
struct ScriptUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};
// A user name or a numeric uid (its group is the user's primary group; a numeric uid without
// a passwd entry gets the gid of the same number). INVALID_ARGUMENT naming script_user for an
// empty or unknown name and for uid 0 or gid 0 (root, or root's group).
absl::StatusOr<ScriptUser> ResolveScriptUser(const std::string& name);

// What to hide from scripts for one of the executor's credential files (a key or token file):
// its directory, or the file alone when that directory is a top-level one scripts need (/etc,
// /usr, ... or "/"). Relative paths are made absolute. Empty for an empty `file`.
std::string HiddenPathForCredential(const std::string& file);

// What the child does, decided before fork: all paths canonical, all strings built.
struct IsolationPlan {
  ScriptIsolation mode = ScriptIsolation::kNone;
  // An empty read-only tmpfs over each (none below another one of them).
  std::vector<std::string> tmpfs_dirs;
  // /dev/null bound over each (files not inside one of tmpfs_dirs).
  std::vector<std::string> null_files;
  // The run's work directory (canonical). When it lies in one of tmpfs_dirs it is bound back
  // into place after the mask: work_mkdirs are made in the tmpfs first, outermost first.
  std::string work_dir;
  bool rebind_work_dir = false;
  std::vector<std::string> work_mkdirs;
  // kUserNamespace: "<uid> <uid> 1" and "<gid> <gid> 1".
  std::string uid_map;
  std::string gid_map;
  // kSwitchUser.
  uid_t uid = 0;
  gid_t gid = 0;
};

// `hidden`: files and directories the script must not see (missing ones are skipped).
// `work_dir`: the run's existing work directory. FAILED_PRECONDITION when "/" is to be hidden
// or the work directory is missing; INVALID_ARGUMENT for uid or gid 0 under kSwitchUser.
absl::StatusOr<IsolationPlan> PlanIsolation(ScriptIsolation mode,
                                            const std::vector<std::string>& hidden,
                                            const std::string& work_dir, uid_t uid, gid_t gid);

// Why a child could not set up its isolation (written to the parent through a pipe).
struct ChildFailure {
  int step = 0;   // A ChildStep.
  int error = 0;  // errno.
};
enum ChildStep : int {
  kStepUnshare = 1,
  kStepMakePrivate,
  kStepMaskDir,
  kStepMaskFile,
  kStepDumpable,
  kStepSetgroupsDeny,
  kStepUidMap,
  kStepGidMap,
  kStepMkdirWork,
  kStepBindWork,
  kStepRemountReadOnly,
  kStepChdir,
  kStepSetgroups,
  kStepSetgid,
  kStepSetuid,
  kStepStillPrivileged,
  kStepNoNewPrivs,
  kStepStdio,
  kStepCloseFds,
  kStepSignals,
  kStepExec,
};
std::string ChildStepName(int step);

// In the child, between fork and exec (async-signal-safe: system calls only): enters the
// namespaces, mounts the masks, binds the work directory back, changes into it and, under
// kSwitchUser, drops to the script user; then sets no_new_privs. Returns false with `failure`
// set on the first step that fails.
bool ApplyIsolation(const IsolationPlan& plan, ChildFailure* failure);

// Removes `name` in the directory `dir_fd` and everything below it without following any
// symbolic link (openat with O_NOFOLLOW, unlinkat): a script cannot make the executor delete
// or change anything outside its work directory. A missing `name` is OK. Directories more than
// kMaxRemoveDepth levels below `name` are left (FAILED_PRECONDITION "not removed: too deep"):
// each level holds a descriptor, and a script may nest directories without bound.
inline constexpr int kMaxRemoveDepth = 256;
absl::Status RemoveTreeAt(int dir_fd, const std::string& name);
// The same for an absolute or relative path (its last component is removed).
absl::Status RemoveTree(const std::string& path);

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_SCRIPT_ISOLATION_H_
