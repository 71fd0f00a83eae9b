#include "common/testing/process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel::testing {

Process::~Process() {
  if (pid_ > 0 && !reaped_) Kill();
}

absl::Status Process::Start(const std::string& binary, const std::vector<std::string>& args,
                            const std::string& log_path,
                            const std::vector<std::string>& extra_env) {
  std::vector<std::string> argv_store = {binary};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    if (!log_path.empty()) {
      int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
    }
    for (const std::string& kv : extra_env) putenv(strdup(kv.c_str()));
    std::vector<char*> argv;
    for (auto& a : argv_store) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  pid_ = pid;
  reaped_ = false;
  return absl::OkStatus();
}

bool Process::running() {
  if (pid_ <= 0 || reaped_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    return false;
  }
  return true;
}

void Process::Signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

absl::Status Process::Wait(absl::Duration timeout, int* exit_code) {
  const absl::Time deadline = RealClock::Get().Now() + timeout;
  while (!reaped_) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      if (exit_code != nullptr) {
        *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      return absl::OkStatus();
    }
    if (RealClock::Get().Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("pid ", pid_, " still running"));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return absl::OkStatus();
}

void Process::Kill() {
  if (pid_ <= 0 || reaped_) return;
  kill(pid_, SIGCONT);
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  reaped_ = true;
}

std::string RunfilePath(const std::string& workspace_relative) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr) return workspace_relative;
  return absl::StrCat(srcdir, "/", ws != nullptr ? ws : "jobwheel", "/", workspace_relative);
}

int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

bool Eventually(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = RealClock::Get().Now() + timeout;
  while (true) {
    if (condition()) return true;
    if (RealClock::Get().Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

absl::Status WaitForServing(const std::string& target, absl::Duration timeout,
                            const std::string& service) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  auto stub = grpc::health::v1::Health::NewStub(channel);
  const absl::Time deadline = RealClock::Get().Now() + timeout;
  std::string last;
  while (RealClock::Get().Now() < deadline) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    grpc::Status s = stub->Check(&ctx, req, &resp);
    if (s.ok() && resp.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      return absl::OkStatus();
    }
    last = s.ok() ? "not serving" : s.error_message();
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat(target, " not serving: ", last));
}

std::string TestTempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(base != nullptr ? base : "/tmp", "/", name, "_", getpid());
  mkdir(dir.c_str(), 0755);
  return dir;
}

}  // namespace jobwheel::testing
