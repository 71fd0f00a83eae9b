#include "sdk/internal/script_isolation.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace jobwheel::sdk {
namespace {

absl::Status Errno(absl::string_view what, int error) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(error)));
}

// `path` is `dir` or lies below it (both canonical).
bool Within(const std::string& path, const std::string& dir) {
  if (path == dir) return true;
  if (dir == "/") return true;
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

// Writes all of `text` to `path` (a /proc file). System calls only.
bool WriteProcFile(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return n == static_cast<ssize_t>(text.size());
}

// Writes the decimal digits of `n` >= 0 and a terminating NUL to `out` (at most 11 bytes).
void FormatInt(int n, char* out) {
  char digits[12];
  int len = 0;
  do {
    digits[len++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0);
  while (len > 0) *out++ = digits[--len];
  *out = '\0';
}

bool Fail(ChildFailure* failure, int step) {
  failure->step = step;
  failure->error = errno;
  return false;
}

}  // namespace

ScriptIsolation DefaultScriptIsolation() {
  return ::geteuid() == 0 ? ScriptIsolation::kSwitchUser : ScriptIsolation::kUserNamespace;
}

absl::string_view ScriptIsolationName(ScriptIsolation isolation) {
  switch (isolation) {
    case ScriptIsolation::kNone:
      return "none";
    case ScriptIsolation::kSwitchUser:
      return "switch-user";
    case ScriptIsolation::kUserNamespace:
      return "user-namespace";
  }
  return "?";
}

absl::StatusOr<ScriptUser> ResolveScriptUser(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("script_user: must not be empty");
  struct passwd pw;
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  ScriptUser user;
  user.name = name;
  uint32_t numeric = 0;
  if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    user.uid = found->pw_uid;
    user.gid = found->pw_gid;
  } else if (absl::SimpleAtoi(name, &numeric)) {
    user.uid = static_cast<uid_t>(numeric);
    user.gid = static_cast<gid_t>(numeric);
    if (::getpwuid_r(user.uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
      user.gid = found->pw_gid;
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("script_user: no such user \"", name, "\" (a name or a numeric uid)"));
  }
  if (user.uid == 0 || user.gid == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "script_user: \"", name, "\" is uid ", user.uid, " gid ", user.gid,
        "; scripts never run as root or in root's group (\"nobody\" is a good choice)"));
  }
  return user;
}

std::string HiddenPathForCredential(const std::string& file) {
  if (file.empty()) return "";
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(file, ec);
  if (ec) absolute = file;
  const std::string normal = absolute.lexically_normal().string();
  const std::string dir = std::filesystem::path(normal).parent_path().string();
  const bool top_level = dir.empty() || dir == "/" || dir.find('/', 1) == std::string::npos;
  return top_level ? normal : dir;
}

absl::StatusOr<IsolationPlan> PlanIsolation(ScriptIsolation mode,
                                            const std::vector<std::string>& hidden,
                                            const std::string& work_dir, uid_t uid, gid_t gid) {
  IsolationPlan plan;
  plan.mode = mode;
  if (mode == ScriptIsolation::kNone) return plan;
  if (mode == ScriptIsolation::kSwitchUser && (uid == 0 || gid == 0)) {
    return absl::InvalidArgumentError("script_user: must not be uid 0 or gid 0");
  }
  char resolved[PATH_MAX];
  if (::realpath(work_dir.c_str(), resolved) == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("script work dir ", work_dir, ": ", std::strerror(errno)));
  }
  plan.work_dir = resolved;
  std::vector<std::string> dirs;
  std::vector<std::string> files;
  for (const std::string& path : hidden) {
    if (path.empty()) continue;
    if (::realpath(path.c_str(), resolved) == nullptr) {
      if (errno == ENOENT) continue;  // Nothing there to see.
      return absl::FailedPreconditionError(
          absl::StrCat("cannot hide ", path, " from scripts: ", std::strerror(errno)));
    }
    const std::string real = resolved;
    if (real == "/") {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot hide ", path, " from scripts: it is the root directory"));
    }
    struct stat st;
    if (::stat(real.c_str(), &st) != 0) return Errno(absl::StrCat("stat ", real), errno);
    (S_ISDIR(st.st_mode) ? dirs : files).push_back(real);
  }
  std::sort(dirs.begin(), dirs.end());
  for (const std::string& d : dirs) {
    // Against every kept one: "/a" < "/a-b" < "/a/c" when sorted.
    if (std::any_of(plan.tmpfs_dirs.begin(), plan.tmpfs_dirs.end(),
                    [&](const std::string& kept) { return Within(d, kept); })) {
      continue;
    }
    plan.tmpfs_dirs.push_back(d);
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  for (const std::string& f : files) {
    if (std::none_of(plan.tmpfs_dirs.begin(), plan.tmpfs_dirs.end(),
                     [&](const std::string& d) { return Within(f, d); })) {
      plan.null_files.push_back(f);
    }
  }
  for (const std::string& d : plan.tmpfs_dirs) {
    if (!Within(plan.work_dir, d)) continue;
    plan.rebind_work_dir = true;
    // The components between the mask and the work directory, outermost first.
    std::string rest = plan.work_dir.substr(d.size());
    std::string path = d;
    size_t start = 1;
    while (start <= rest.size() && !rest.empty()) {
      size_t slash = rest.find('/', start);
      if (slash == std::string::npos) slash = rest.size();
      path = d + rest.substr(0, slash);
      plan.work_mkdirs.push_back(path);
      start = slash + 1;
    }
    break;
  }
  if (mode == ScriptIsolation::kUserNamespace) {
    plan.uid_map = absl::StrCat(::getuid(), " ", ::getuid(), " 1\n");
    plan.gid_map = absl::StrCat(::getgid(), " ", ::getgid(), " 1\n");
  }
  plan.uid = uid;
  plan.gid = gid;
  return plan;
}

std::string ChildStepName(int step) {
  switch (step) {
    case kStepUnshare:
      return "unshare (new mount namespace)";
    case kStepMakePrivate:
      return "make mounts private";
    case kStepMaskDir:
      return "mount an empty tmpfs over a hidden directory";
    case kStepMaskFile:
      return "mount /dev/null over a hidden file";
    case kStepDumpable:
      return "prctl(PR_SET_DUMPABLE)";
    case kStepSetgroupsDeny:
      return "write /proc/self/setgroups";
    case kStepUidMap:
      return "write /proc/self/uid_map";
    case kStepGidMap:
      return "write /proc/self/gid_map";
    case kStepMkdirWork:
      return "recreate the work directory's path";
    case kStepBindWork:
      return "bind the work directory";
    case kStepRemountReadOnly:
      return "remount a mask read-only";
    case kStepChdir:
      return "chdir to the work directory";
    case kStepSetgroups:
      return "setgroups";
    case kStepSetgid:
      return "setgid";
    case kStepSetuid:
      return "setuid";
    case kStepStillPrivileged:
      return "drop root (setuid(0) still succeeded)";
    case kStepNoNewPrivs:
      return "prctl(PR_SET_NO_NEW_PRIVS)";
    case kStepStdio:
      return "set up stdin/stdout/stderr";
    case kStepCloseFds:
      return "close inherited file descriptors";
    case kStepSignals:
      return "reset signals";
    case kStepExec:
      return "exec";
  }
  return absl::StrCat("step ", step);
}

bool ApplyIsolation(const IsolationPlan& plan, ChildFailure* failure) {
  if (plan.mode == ScriptIsolation::kNone) {
    if (!plan.work_dir.empty() && ::chdir(plan.work_dir.c_str()) != 0) {
      return Fail(failure, kStepChdir);
    }
    return true;
  }
  const bool userns = plan.mode == ScriptIsolation::kUserNamespace;
  if (::unshare(userns ? (CLONE_NEWUSER | CLONE_NEWNS) : CLONE_NEWNS) != 0) {
    return Fail(failure, kStepUnshare);
  }
  // Nothing mounted here propagates back to the executor's namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Fail(failure, kStepMakePrivate);
  }
  // The work directory as it is before the masks (a descriptor of this namespace's mount:
  // one opened before unshare could not be bound here).
  char work_fd_path[32] = "/proc/self/fd/";
  if (plan.rebind_work_dir) {
    const int work_fd =
        ::open(plan.work_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (work_fd < 0) return Fail(failure, kStepBindWork);
    FormatInt(work_fd, work_fd_path + std::strlen(work_fd_path));
  }
  // The masks first: from here on this process's /proc/<pid>/root shows only the masked view.
  for (const std::string& dir : plan.tmpfs_dirs) {
    if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "mode=0755,size=64k,nr_inodes=256") != 0) {
      return Fail(failure, kStepMaskDir);
    }
  }
  for (const std::string& file : plan.null_files) {
    if (::mount("/dev/null", file.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return Fail(failure, kStepMaskFile);
    }
  }
  if (userns) {
    // An executor that keeps scripts in a user namespace is not dumpable (its /proc files are
    // root's); this child must be, to write its own maps. Its /proc/<pid>/root is masked now
    // and it holds no descriptor of the executor's any more (the caller closed them): while
    // dumpable, a process of the same uid could still read its memory and environ (a copy of
    // the executor's), so it is dumpable only while it writes the maps.
    if (::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return Fail(failure, kStepDumpable);
    if (!WriteProcFile("/proc/self/setgroups", "deny")) return Fail(failure, kStepSetgroupsDeny);
    if (!WriteProcFile("/proc/self/uid_map", plan.uid_map)) return Fail(failure, kStepUidMap);
    if (!WriteProcFile("/proc/self/gid_map", plan.gid_map)) return Fail(failure, kStepGidMap);
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return Fail(failure, kStepDumpable);
  }
  if (plan.rebind_work_dir) {
    for (const std::string& dir : plan.work_mkdirs) {
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        return Fail(failure, kStepMkdirWork);
      }
    }
    if (::mount(work_fd_path, plan.work_dir.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return Fail(failure, kStepBindWork);
    }
  }
  for (const std::string& dir : plan.tmpfs_dirs) {
    if (::mount(nullptr, dir.c_str(), nullptr,
                MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      return Fail(failure, kStepRemountReadOnly);
    }
  }
  if (!plan.work_dir.empty() && ::chdir(plan.work_dir.c_str()) != 0) {
    return Fail(failure, kStepChdir);
  }
  if (plan.mode == ScriptIsolation::kSwitchUser) {
    const gid_t groups[1] = {plan.gid};
    if (::setgroups(1, groups) != 0) return Fail(failure, kStepSetgroups);
    if (::setgid(plan.gid) != 0) return Fail(failure, kStepSetgid);
    if (::setuid(plan.uid) != 0) return Fail(failure, kStepSetuid);
    if (::setuid(0) == 0 || ::getuid() != plan.uid || ::geteuid() != plan.uid) {
      errno = EPERM;
      return Fail(failure, kStepStillPrivileged);
    }
  }
  // No set-uid or file-capability binary gives the script more than it has.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Fail(failure, kStepNoNewPrivs);
  return true;
}

namespace {

absl::Status RemoveTreeAtDepth(int dir_fd, const std::string& name, int depth) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("cannot remove \"", name, "\""));
  }
  if (::unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) return absl::OkStatus();
  if (errno != EISDIR && errno != EPERM) return Errno(absl::StrCat("unlink ", name), errno);
  // Each level holds a descriptor and a stack frame: a script's deeper tree is left.
  if (depth >= kMaxRemoveDepth) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, ": not removed: too deep (over ", kMaxRemoveDepth, " levels)"));
  }
  // This very directory (never a symlink put in its place), opened even when the script left
  // it without permissions: its owner (or root) may give them back.
  const int path_fd = ::openat(dir_fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (path_fd < 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return Errno(absl::StrCat("open ", name), errno);
  }
  const std::string fd_path = absl::StrCat("/proc/self/fd/", path_fd);
  (void)::fchmodat(AT_FDCWD, fd_path.c_str(), 0700, 0);
  const int fd = ::open(fd_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int open_errno = errno;
  ::close(path_fd);
  if (fd < 0) return Errno(absl::StrCat("open ", name), open_errno);
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int saved = errno;
    ::close(fd);
    return Errno(absl::StrCat("read ", name), saved);
  }
  std::vector<std::string> entries;
  while (struct dirent* e = ::readdir(dir)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    entries.emplace_back(e->d_name);
  }
  absl::Status first;
  for (const std::string& entry : entries) {
    absl::Status s = RemoveTreeAtDepth(fd, entry, depth + 1);
    if (!s.ok() && first.ok()) first = absl::Status(s.code(), absl::StrCat(name, "/", s.message()));
  }
  ::closedir(dir);  // Closes fd.
  if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT && first.ok()) {
    first = Errno(absl::StrCat("rmdir ", name), errno);
  }
  return first;
}

}  // namespace

absl::Status RemoveTreeAt(int dir_fd, const std::string& name) {
  return RemoveTreeAtDepth(dir_fd, name, 0);
}

absl::Status RemoveTree(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string parent =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return Errno(absl::StrCat("open ", parent), errno);
  }
  absl::Status s = RemoveTreeAt(fd, name);
  ::close(fd);
  return s;
}

}  // namespace jobwheel::sdk
