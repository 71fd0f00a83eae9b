#include "sdk/internal/script_runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sdk/internal/file_io.h"
#include "sdk/internal/private_dir.h"
#include "sdk/internal/script_environment.h"

extern char** environ;

namespace jobwheel::sdk {
namespace {

namespace fs = std::filesystem;

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// Splits buffered output into lines and hands complete ones to `output`.
void EmitLines(std::string* buffer, bool flush_partial,
               const std::function<void(absl::string_view)>& output) {
  size_t start = 0;
  while (true) {
    size_t nl = buffer->find('\n', start);
    if (nl == std::string::npos) break;
    output(absl::string_view(*buffer).substr(start, nl - start));
    start = nl + 1;
  }
  buffer->erase(0, start);
  // A very long line without '\n' is cut rather than buffered forever.
  if (!buffer->empty() && (flush_partial || buffer->size() > 64 * 1024)) {
    output(*buffer);
    buffer->clear();
  }
}

// `name` itself when it has a '/', else the first executable `name` in this process's PATH
// (a name not found is returned as is: exec then fails with ENOENT).
std::string FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* env_path = std::getenv("PATH");
  const std::string search = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= search.size()) {
    size_t colon = search.find(':', start);
    if (colon == std::string::npos) colon = search.size();
    const std::string dir = colon > start ? search.substr(start, colon - start) : ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return name;
}

// Closes every descriptor >= `first`. System calls only: runs between fork and exec.
bool CloseFrom(int first) {
  if (::syscall(SYS_close_range, static_cast<unsigned>(first), ~0u, 0u) == 0) return true;
  // Older kernels: walk /proc/self/fd (its positions are descriptor numbers, so closing the
  // ones already listed does not disturb the walk).
  const int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  char buf[4096];
  while (true) {
    const long n = ::syscall(SYS_getdents64, dir, buf, sizeof(buf));
    if (n < 0) {
      ::close(dir);
      return false;
    }
    if (n == 0) break;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
      int fd = 0;
      bool number = d->d_name[0] != '\0';
      for (const char* c = d->d_name; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9') {
          number = false;
          break;
        }
        fd = fd * 10 + (*c - '0');
      }
      if (number && fd >= first && fd != dir) ::close(fd);
      off += d->d_reclen;
    }
  }
  ::close(dir);
  return true;
}

// The refusal when a script cannot be isolated (written to its output too): fails closed, the
// script does not run unisolated.
absl::Status RefuseUnisolated(const std::function<void(absl::string_view)>& output,
                              const absl::Status& why) {
  const std::string message =
      absl::StrCat("script not run: cannot isolate it from the executor: ", why.message());
  output(message);
  return absl::FailedPreconditionError(message);
}

// Pointers to each string's characters, then nullptr (for execve); `strings` outlives them.
std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// What the child execs, and the descriptors it keeps (all prepared before fork).
struct ChildExec {
  const char* program = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int script_fd = -1;  // Its stdin; -1: /dev/null.
  int out_fd = -1;     // The output pipe's write end: its stdout and stderr.
  int err_fd = -1;     // The error pipe's write end: a ChildFailure if it cannot exec.
  const IsolationPlan* plan = nullptr;
};

// The forked child: system calls only until exec. Never returns.
[[noreturn]] void RunChild(const ChildExec& c) {
  ChildFailure failure;
  int err_fd = c.err_fd;
  auto fail = [&](int step) {
    failure.step = step;
    failure.error = errno;
    (void)!::write(err_fd, &failure, sizeof(failure));
    ::_exit(127);
  };
  // Own process group (so killpg reaches the whole script), default dispositions and an
  // empty mask (the embedding service may block or ignore signals in its threads).
  ::setpgid(0, 0);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGTERM, SIGINT, SIGPIPE, SIGHUP, SIGQUIT, SIGCHLD}) {
    if (::sigaction(sig, &dfl, nullptr) != 0) fail(kStepSignals);
  }
  sigset_t empty;
  sigemptyset(&empty);
  if (::sigprocmask(SIG_SETMASK, &empty, nullptr) != 0) fail(kStepSignals);
  // Descriptors first, before any isolation step (under a user namespace the child is
  // briefly dumpable: it then holds nothing of the executor's). What it keeps is moved to
  // 3 and above first: an embedding process running with 0-2 closed gets pipes there.
  const int err_high = ::fcntl(c.err_fd, F_DUPFD_CLOEXEC, 3);
  if (err_high < 0) fail(kStepStdio);
  err_fd = err_high;
  const int in = c.script_fd >= 0 ? c.script_fd : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0) fail(kStepStdio);
  const int in_high = ::fcntl(in, F_DUPFD_CLOEXEC, 3);
  const int out_high = ::fcntl(c.out_fd, F_DUPFD_CLOEXEC, 3);
  if (in_high < 0 || out_high < 0 || ::dup2(in_high, 0) < 0 || ::dup2(out_high, 1) < 0 ||
      ::dup2(out_high, 2) < 0) {
    fail(kStepStdio);
  }
  // The error pipe (close-on-exec) at 3, and nothing else of the executor's: no sockets,
  // no token, log or database files.
  if (err_fd != 3) {
    if (::dup3(err_fd, 3, O_CLOEXEC) < 0) fail(kStepCloseFds);
    err_fd = 3;
  }
  if (!CloseFrom(4)) fail(kStepCloseFds);
  if (!ApplyIsolation(*c.plan, &failure)) {
    (void)!::write(err_fd, &failure, sizeof(failure));
    ::_exit(127);
  }
  ::execve(c.program, c.argv, c.envp);
  fail(kStepExec);
  ::_exit(127);  // Not reached: fail exits.
}

// Reads the child's error pipe until exec closes it: OK when it exec-ed; otherwise reaps the
// child and says which step failed (a step of the isolation is a refusal).
absl::Status AwaitExec(pid_t pid, int err_read_fd, bool isolated, const std::string& interpreter,
                       const std::function<void(absl::string_view)>& output) {
  ChildFailure failure;
  ssize_t got = 0;
  do {
    got = ::read(err_read_fd, &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return absl::OkStatus();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (failure.step == kStepExec || (!isolated && failure.step == kStepChdir)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start ", interpreter, ": ", std::strerror(failure.error)));
  }
  return RefuseUnisolated(
      output, absl::InternalError(
                  absl::StrCat(ChildStepName(failure.step), ": ", std::strerror(failure.error))));
}

// Reads one chunk of the output pipe into `buffer` and passes on its complete lines; false when
// the pipe is closed (or broken; EAGAIN too unless `eagain_is_open`).
bool ReadOutput(int read_fd, bool eagain_is_open, std::string* buffer,
                const std::function<void(absl::string_view)>& output) {
  char chunk[4096];
  ssize_t got = ::read(read_fd, chunk, sizeof(chunk));
  if (got > 0) {
    buffer->append(chunk, static_cast<size_t>(got));
    EmitLines(buffer, false, output);
    return true;
  }
  return got < 0 && (errno == EINTR || (eagain_is_open && errno == EAGAIN));
}

ScriptOutcome OutcomeOf(int wait_status) {
  ScriptOutcome outcome;
  if (WIFEXITED(wait_status)) {
    outcome.exited = true;
    outcome.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    outcome.term_signal = WTERMSIG(wait_status);
  }
  return outcome;
}

ScriptRunnerOptions WithDefaultWorkDir(ScriptRunnerOptions options) {
  if (options.work_dir.empty()) {
    options.work_dir = (fs::path(options.scripts_dir).parent_path() / "work").string();
  }
  return options;
}

}  // namespace

ScriptRunner::ScriptRunner(ScriptRunnerOptions options, Clock& clock)
    : options_(WithDefaultWorkDir(std::move(options))), clock_(clock) {
  if (options_.isolation == ScriptIsolation::kUserNamespace) {
    // Scripts keep this process's uid: without this they could read its /proc files
    // (environ, memory, its view of the file system through root/ and cwd/, open files).
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  }
}

absl::StatusOr<std::string> ScriptRunner::Materialize(int64_t job_id, int version,
                                                      Language language, absl::string_view source) {
  if (job_id <= 0) return absl::InvalidArgumentError("job_id: must be positive");
  if (version < 0) return absl::InvalidArgumentError("script_version: must not be negative");
  const std::string path = absl::StrCat(options_.scripts_dir, "/", job_id, "_v", version,
                                        language == Language::kPython ? ".py" : ".sh");
  absl::MutexLock lock(&write_mu_);
  if (auto current = ReadFile(path); current.ok() && *current == source) return path;
  if (absl::Status s = MakePrivateDir(options_.scripts_dir, "scripts dir"); !s.ok()) return s;
  // Read by the interpreter, so 0600 is enough; created so, never chmod-ed later.
  if (absl::Status s = ReplaceFile(path, source, 0600); !s.ok()) return s;
  return path;
}

absl::StatusOr<std::string> ScriptRunner::PrepareWorkDir(const std::string& work_dir,
                                                         const std::string& source_path) {
  if (absl::Status s = MakePrivateDir(options_.work_dir, "script work dir"); !s.ok()) return s;
  // Left by a crash (never follows a link the script left there).
  if (absl::Status s = RemoveTree(work_dir); !s.ok()) return s;
  if (::mkdir(work_dir.c_str(), 0700) != 0) return Errno(absl::StrCat("create ", work_dir));
  const int dir_fd = ::open(work_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) return Errno(absl::StrCat("open ", work_dir));
  absl::Cleanup close_dir = [dir_fd] { ::close(dir_fd); };
  const bool switch_user = options_.isolation == ScriptIsolation::kSwitchUser;
  if (switch_user && ::fchown(dir_fd, options_.script_uid, options_.script_gid) != 0) {
    return Errno(absl::StrCat("chown ", work_dir));
  }
  // The script reads its own copy: the sources directory is the executor's alone.
  auto read = ReadFile(source_path);
  if (!read.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot read ", source_path));
  }
  const std::string source = *std::move(read);
  const std::string name = fs::path(source_path).filename().string();
  const int fd =
      ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Errno(absl::StrCat("create ", work_dir, "/", name));
  absl::Status written = WriteAll(fd, source, name);
  if (written.ok() && switch_user && ::fchown(fd, options_.script_uid, options_.script_gid) != 0) {
    written = Errno(absl::StrCat("chown ", work_dir, "/", name));
  }
  ::close(fd);
  if (!written.ok()) return written;
  return name;
}

absl::StatusOr<ScriptOutcome> ScriptRunner::Run(
    Language language, const std::string& path, const CancellationToken& cancel,
    const std::function<void(absl::string_view)>& output,
    const std::function<void(pid_t)>& on_start, const ScriptContext& context) {
  const bool isolated = options_.isolation != ScriptIsolation::kNone;
  // Fails closed: whatever goes wrong below, the script does not run unisolated.
  if (isolated && context.run_id <= 0) {
    return RefuseUnisolated(output, absl::InvalidArgumentError("no run id for its work directory"));
  }
  // The run's private work directory: its cwd, HOME and TMPDIR, gone when it ends.
  std::string work_dir;
  std::string script = path;
  absl::Cleanup remove_work_dir = [&work_dir, &output] {
    if (work_dir.empty()) return;
    absl::Status removed = RemoveTree(work_dir);
    if (!removed.ok()) output(absl::StrCat("work directory not removed: ", removed.message()));
  };
  if (context.run_id > 0) {
    work_dir = absl::StrCat(options_.work_dir, "/run-", context.run_id);
    auto copy = PrepareWorkDir(work_dir, path);
    if (!copy.ok()) {
      if (isolated) return RefuseUnisolated(output, copy.status());
      return copy.status();
    }
    script = "./" + *copy;  // Relative to the work directory, its cwd.
  }
  IsolationPlan plan;
  if (isolated) {
    auto planned = PlanIsolation(options_.isolation, options_.hidden_paths, work_dir,
                                 options_.script_uid, options_.script_gid);
    if (!planned.ok()) return RefuseUnisolated(output, planned.status());
    plan = std::move(*planned);
  } else {
    plan.work_dir = work_dir;
  }
  std::vector<std::string> env_store = ScriptEnvironment(environ, work_dir, context.job_vars);
  const std::vector<char*> envp = CStrings(env_store);

  const std::string interpreter =
      language == Language::kPython ? options_.python_binary : options_.shell_binary;
  // PATH lookup of the interpreter uses the executor's PATH; the script gets envp only.
  const std::string program = FindProgram(interpreter);
  // Python reads its program from stdin ("-"): it turns a script path into an absolute one
  // before opening it, and the script user may not be able to traverse the work directory's
  // ancestors (e.g. under /root) although it may use the directory itself (its cwd).
  const bool script_on_stdin = language == Language::kPython;
  int script_fd = -1;
  if (script_on_stdin) {
    const std::string opened =
        absl::StartsWith(script, "./") ? absl::StrCat(work_dir, "/", script.substr(2)) : script;
    script_fd = ::open(opened.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (script_fd < 0) return Errno("open script");
  }
  absl::Cleanup close_script = [script_fd] {
    if (script_fd >= 0) ::close(script_fd);
  };
  std::vector<std::string> argv_store = {interpreter, script_on_stdin ? "-" : script};
  if (options_.params_in_argv) {
    argv_store.insert(argv_store.end(), context.legacy_args.begin(), context.legacy_args.end());
  }
  const std::vector<char*> argv = CStrings(argv_store);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Errno("pipe2");
  const int read_fd = fds[0];
  absl::Cleanup close_read = [read_fd] { ::close(read_fd); };
  int errs[2];
  if (::pipe2(errs, O_CLOEXEC) != 0) {
    ::close(fds[1]);
    return Errno("pipe2");
  }

  ChildExec child;
  child.program = program.c_str();
  child.argv = argv.data();
  child.envp = envp.data();
  child.script_fd = script_fd;
  child.out_fd = fds[1];
  child.err_fd = errs[1];
  child.plan = &plan;
  const pid_t pid = ::fork();
  if (pid == 0) RunChild(child);
  const int fork_errno = errno;
  ::close(fds[1]);
  ::close(errs[1]);
  if (pid < 0) {
    ::close(errs[0]);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(fork_errno)));
  }
  ::setpgid(pid, pid);  // Also here, so killpg works before the child got to it.
  absl::Status started = AwaitExec(pid, errs[0], isolated, interpreter, output);
  ::close(errs[0]);
  if (!started.ok()) return started;
  if (on_start) on_start(pid);
  return OutcomeOf(Supervise(pid, read_fd, cancel, output));
}

int ScriptRunner::Supervise(pid_t pid, int read_fd, const CancellationToken& cancel,
                            const std::function<void(absl::string_view)>& output) {
  std::string buffer;
  bool pipe_open = true;
  int status = 0;
  absl::Time term_sent = absl::InfiniteFuture();
  bool kill_sent = false;
  const int poll_ms = static_cast<int>(absl::ToInt64Milliseconds(options_.poll_interval));
  while (true) {
    if (pipe_open) {
      struct pollfd p = {read_fd, POLLIN, 0};
      int n = ::poll(&p, 1, poll_ms);
      if (n > 0) pipe_open = ReadOutput(read_fd, /*eagain_is_open=*/true, &buffer, output);
    } else {
      clock_.SleepFor(options_.poll_interval);
    }
    // Peek without reaping: the zombie keeps the process group id reserved for killpg.
    siginfo_t info;
    std::memset(&info, 0, sizeof(info));
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      break;
    }
    if (cancel.cancelled()) {
      if (term_sent == absl::InfiniteFuture()) {
        ::killpg(pid, SIGTERM);
        term_sent = clock_.Now();
      } else if (!kill_sent && clock_.Now() - term_sent >= options_.kill_grace) {
        ::killpg(pid, SIGKILL);
        kill_sent = true;
      }
    }
  }
  // Nothing the script started outlives it.
  ::killpg(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Drain what is left in the pipe (bounded: a process that left the group may hold it).
  const absl::Time drain_deadline = clock_.Now() + absl::Seconds(1);
  while (pipe_open && clock_.Now() < drain_deadline) {
    struct pollfd p = {read_fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    pipe_open = ReadOutput(read_fd, /*eagain_is_open=*/false, &buffer, output);
  }
  EmitLines(&buffer, true, output);
  return status;
}

}  // namespace jobwheel::sdk
