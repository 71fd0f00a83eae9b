// A bench-only executor: the real SDK (//sdk:jobwheel_sdk) with a `noop` handler that records,
// for every run, when its handler started against the run's scheduled time. Results still go
// to the real dispatcher, so a run counts as completed only once its result is persisted.
//
// Each record is one line "run_id job_id fire_id attempt scheduled_us received_us" appended to
// --record_file (flushed every 200 ms and at exit); the bench harness aggregates them.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/base/flags.h"
#include "common/base/logging.h"
#include "common/base/mutex_mode.h"
#include "common/time/clock.h"
#include "jobwheel/executor.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "ExecutorService listen address");
ABSL_FLAG(std::string, app, "bench", "Executor group (app) name");
ABSL_FLAG(std::string, registry_target, "127.0.0.1:7101", "Registry target");
ABSL_FLAG(std::string, dispatcher_target, "127.0.0.1:7102", "Dispatcher target for results");
ABSL_FLAG(std::string, executor_token_file, "", "Token presented to the registry and dispatcher");
ABSL_FLAG(std::string, dispatcher_public_key_file, "",
          "PEM file with the dispatchers' Ed25519 public key(s): verifies their calls");
ABSL_FLAG(std::string, scheduler_public_key_file, "",
          "PEM file with the scheduler's Ed25519 public key(s): verifies its Kill/Log calls");
ABSL_FLAG(bool, insecure_dev, false, "Accept unauthenticated calls (development only)");
ABSL_FLAG(std::string, log_dir, "/tmp/jobwheel-bench-executor/logs", "Run logs");
ABSL_FLAG(std::string, spool_dir, "/tmp/jobwheel-bench-executor/spool", "Result spool");
ABSL_FLAG(std::string, record_file, "", "Where per-run lateness records are appended");
ABSL_FLAG(absl::Duration, grace_period, absl::Seconds(2), "Shutdown grace for in-flight runs");
ABSL_FLAG(std::string, log_level, "warn", "trace, debug, info, warn, error");

namespace {

// Buffers records in memory; a thread appends them to the file every 200 ms.
class Recorder {
 public:
  explicit Recorder(const std::string& path) {
    if (!path.empty()) file_ = std::fopen(path.c_str(), "a");
    if (file_ != nullptr) thread_ = std::thread([this] { Loop(); });
  }
  ~Recorder() {
    done_.Notify();
    if (thread_.joinable()) thread_.join();
    Flush();
    if (file_ != nullptr) std::fclose(file_);
  }
  bool ok() const { return file_ != nullptr; }

  void Add(const jobwheel::JobContext& ctx, absl::Time received) {
    absl::MutexLock lock(&mu_);
    absl::StrAppend(&buffer_, ctx.run_id(), " ", ctx.job_id(), " ", ctx.fire_id(), " ",
                    ctx.attempt(), " ", absl::ToUnixMicros(ctx.scheduled_time()), " ",
                    absl::ToUnixMicros(received), "\n");
  }

 private:
  void Loop() {
    while (!done_.WaitForNotificationWithTimeout(absl::Milliseconds(200))) Flush();
  }
  void Flush() {
    std::string out;
    {
      absl::MutexLock lock(&mu_);
      out.swap(buffer_);
    }
    if (file_ == nullptr || out.empty()) return;
    std::fwrite(out.data(), 1, out.size(), file_);
    std::fflush(file_);
  }

  std::FILE* file_ = nullptr;
  absl::Mutex mu_;
  std::string buffer_ ABSL_GUARDED_BY(mu_);
  absl::Notification done_;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  jobwheel::DisableMutexDeadlockDetection();
  jobwheel::ParseFlagsWithEnv(argc, argv,
                              "jobwheel bench executor: a noop handler that records lateness");
  jobwheel::InitLogging("bench_executor", false, absl::GetFlag(FLAGS_log_level));

  jobwheel::ExecutorOptions options;
  options.app = absl::GetFlag(FLAGS_app);
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.registry_target = absl::GetFlag(FLAGS_registry_target);
  options.dispatcher_target = absl::GetFlag(FLAGS_dispatcher_target);
  options.insecure_dev = absl::GetFlag(FLAGS_insecure_dev);
  options.log_dir = absl::GetFlag(FLAGS_log_dir);
  options.spool_dir = absl::GetFlag(FLAGS_spool_dir);
  options.grace_period = absl::GetFlag(FLAGS_grace_period);
  auto executor_token =
      jobwheel::ReadTokenFile(absl::GetFlag(FLAGS_executor_token_file), "--executor_token_file");
  auto dispatcher_keys = jobwheel::ReadKeyFile(absl::GetFlag(FLAGS_dispatcher_public_key_file),
                                               "--dispatcher_public_key_file");
  auto scheduler_keys = jobwheel::ReadKeyFile(absl::GetFlag(FLAGS_scheduler_public_key_file),
                                              "--scheduler_public_key_file");
  if (!executor_token.ok() || !dispatcher_keys.ok() || !scheduler_keys.ok()) {
    spdlog::critical("{} {} {}", executor_token.status().ToString(),
                     dispatcher_keys.status().ToString(), scheduler_keys.status().ToString());
    return 2;
  }
  options.executor_token = *executor_token;
  options.dispatcher_public_keys = *dispatcher_keys;
  options.scheduler_public_keys = *scheduler_keys;

  Recorder recorder(absl::GetFlag(FLAGS_record_file));
  if (!absl::GetFlag(FLAGS_record_file).empty() && !recorder.ok()) {
    spdlog::critical("--record_file {}: cannot open", absl::GetFlag(FLAGS_record_file));
    return 2;
  }
  jobwheel::Executor executor(options);
  absl::Status st = executor.Register("noop", [&recorder](jobwheel::JobContext& ctx) {
    recorder.Add(ctx, jobwheel::RealClock::Get().Now());
    return jobwheel::Result::Ok();
  });
  if (st.ok()) st = executor.Run();
  if (!st.ok()) {
    spdlog::critical("bench executor: {}", st.ToString());
    return 1;
  }
  return 0;
}
