#include "sdk/internal/script_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "sdk/internal/private_dir.h"
#include "sdk/internal/script_environment.h"
#include "sdk/internal/write_all.h"

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

ScriptRunnerOptions WithDefaultWorkDir(ScriptRunnerOptions options) {
  if (options.work_dir.empty()) {
    options.work_dir = (fs::path(options.scripts_dir).parent_path() / "work").string();
  }
  return options;
}

}  // namespace

ScriptRunner::ScriptRunner(ScriptRunnerOptions options)
    : options_(WithDefaultWorkDir(std::move(options))) {}

absl::StatusOr<std::string> ScriptRunner::Materialize(int64_t job_id, int version,
                                                      Language language, absl::string_view source) {
  if (job_id <= 0) return absl::InvalidArgumentError("job_id: must be positive");
  if (version < 0) return absl::InvalidArgumentError("script_version: must not be negative");
  const std::string path = absl::StrCat(options_.scripts_dir, "/", job_id, "_v", version,
                                        language == Language::kPython ? ".py" : ".sh");
  absl::MutexLock lock(&write_mu_);
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      if (ss.str() == source) return path;
    }
  }
  if (absl::Status s = MakePrivateDir(options_.scripts_dir, "scripts dir"); !s.ok()) return s;
  const std::string tmp = absl::StrCat(path, ".", ::getpid(), ".tmp");
  ::unlink(tmp.c_str());  // Left by a crash of an earlier process with this pid.
  {
    // Read by the interpreter, so 0600 is enough; created so, never chmod-ed later.
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return Errno(absl::StrCat("create ", tmp));
    absl::Status written = WriteAll(fd, source, tmp);
    ::close(fd);
    if (!written.ok()) {
      ::unlink(tmp.c_str());
      return absl::InternalError(absl::StrCat("cannot write ", tmp, ": ", written.message()));
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Errno(absl::StrCat("rename ", tmp));
  return path;
}

absl::StatusOr<ScriptOutcome> ScriptRunner::Run(
    Language language, const std::string& path, const std::vector<std::string>& args,
    const CancellationToken& cancel, const std::function<void(absl::string_view)>& output,
    const std::function<void(pid_t)>& on_start, const ScriptContext& context) {
  // The run's private work directory: its cwd, HOME and TMPDIR, gone when it ends.
  std::string work_dir;
  if (context.run_id > 0) {
    if (absl::Status s = MakePrivateDir(options_.work_dir, "script work dir"); !s.ok()) return s;
    work_dir = absl::StrCat(options_.work_dir, "/run-", context.run_id);
    std::error_code ec;
    fs::remove_all(work_dir, ec);  // Left by a crash (never follows symlinks).
    if (::mkdir(work_dir.c_str(), 0700) != 0) return Errno(absl::StrCat("create ", work_dir));
  }
  absl::Cleanup remove_work_dir = [&work_dir] {
    std::error_code ec;
    if (!work_dir.empty()) fs::remove_all(work_dir, ec);
  };
  std::vector<std::string> env_store = ScriptEnvironment(environ, work_dir, context.job_vars);
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);

  const std::string interpreter =
      language == Language::kPython ? options_.python_binary : options_.shell_binary;
  std::vector<std::string> argv_store = {interpreter, path};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Errno("pipe2");
  const int read_fd = fds[0];
  absl::Cleanup close_read = [read_fd] { ::close(read_fd); };

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  // Nothing else of the executor's: no sockets, no token or database files left open.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (!work_dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, work_dir.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group (so killpg reaches the whole script), default signal dispositions and
  // an empty mask (the embedding service may block SIGTERM in its threads).
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGHUP);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  // PATH lookup of the interpreter uses the executor's PATH; the script gets envp only.
  int rc = ::posix_spawnp(&pid, interpreter.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start ", interpreter, ": ", std::strerror(rc)));
  }
  if (on_start) on_start(pid);

  std::string buffer;
  bool pipe_open = true;
  bool exited = false;
  int status = 0;
  absl::Time term_sent = absl::InfiniteFuture();
  bool kill_sent = false;
  const int poll_ms = static_cast<int>(absl::ToInt64Milliseconds(options_.poll_interval));
  while (!exited) {
    if (pipe_open) {
      struct pollfd p = {read_fd, POLLIN, 0};
      int n = ::poll(&p, 1, poll_ms);
      if (n > 0) {
        char chunk[4096];
        ssize_t got = ::read(read_fd, chunk, sizeof(chunk));
        if (got > 0) {
          buffer.append(chunk, static_cast<size_t>(got));
          EmitLines(&buffer, false, output);
        } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
          pipe_open = false;
        }
      }
    } else {
      ::usleep(static_cast<useconds_t>(poll_ms) * 1000);
    }
    // Peek without reaping: the zombie keeps the process group id reserved for killpg.
    siginfo_t info;
    std::memset(&info, 0, sizeof(info));
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      exited = true;
      break;
    }
    if (cancel.cancelled()) {
      if (term_sent == absl::InfiniteFuture()) {
        ::killpg(pid, SIGTERM);
        term_sent = absl::Now();
      } else if (!kill_sent && absl::Now() - term_sent >= options_.kill_grace) {
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
  const absl::Time drain_deadline = absl::Now() + absl::Seconds(1);
  while (pipe_open && absl::Now() < drain_deadline) {
    struct pollfd p = {read_fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char chunk[4096];
    ssize_t got = ::read(read_fd, chunk, sizeof(chunk));
    if (got > 0) {
      buffer.append(chunk, static_cast<size_t>(got));
      EmitLines(&buffer, false, output);
    } else if (got == 0 || errno != EINTR) {
      pipe_open = false;
    }
  }
  EmitLines(&buffer, true, output);

  ScriptOutcome outcome;
  if (WIFEXITED(status)) {
    outcome.exited = true;
    outcome.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    outcome.term_signal = WTERMSIG(status);
  }
  return outcome;
}

}  // namespace jobwheel::sdk
