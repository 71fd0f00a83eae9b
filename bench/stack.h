#ifndef JOBWHEEL_BENCH_STACK_H_
#define JOBWHEEL_BENCH_STACK_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "bench/bench_db.h"
#include "bench/options.h"
#include "bench/run_records.h"
#include "bench/sampling.h"
#include "common/testing/process.h"

namespace jobwheel::bench {

// One process the bench started, and its ports.
struct Service {
  std::string name;
  std::unique_ptr<testing::Process> proc = std::make_unique<testing::Process>();
  int port = 0;
  int metrics_port = 0;
  std::string record_file;  // Bench executors that record runs.
  size_t record_offset = 0;
};

// The processes under test, started from --bin_dir on free loopback ports with token auth:
// registry, dispatcher, two schedulers (sched-a leads, sched-b stands by) and the bench
// executors of app `app` — or, attached to a running stack, only the bench executors. Every
// child's pid is appended to <work_dir>/pids so scripts/bench can end exactly those if the
// harness dies. Not thread-safe.
class Stack {
 public:
  Stack(const BenchOptions& options, BenchDb& db, std::string app);
  ~Stack() { Stop(); }

  absl::Status Start();
  // SIGTERM to everything started (executors first), SIGKILL after 10 s. Idempotent.
  void Stop();

  const std::string& app() const { return app_; }
  bool attached() const { return options_.attached(); }

  // Schedulers: 0 is sched-a, 1 is sched-b. (Re)starts one on its old ports.
  absl::Status StartScheduler(int index);
  Service& scheduler(int index) { return schedulers_[index]; }
  static std::string ReplicaName(int index) { return index == 0 ? "sched-a" : "sched-b"; }

  // Starts a bench executor for `app` (recording runs when `record`) and waits until it
  // serves.
  absl::Status StartExecutor(Service& s, const std::string& app, bool record);

  // Records the bench executors appended since the last call.
  std::vector<RunRecord> NewRecords();
  // The stack's processes by component, PostgreSQL's (from --pg_data) included.
  ProcSet Processes();

  // The dispatcher's executors_known gauge; nullopt if it cannot be read.
  absl::optional<int> ExecutorsKnown();
  // Waits until `ok(executors_known)` holds; DEADLINE_EXCEEDED naming `what` otherwise.
  absl::Status WaitExecutorsKnown(const std::function<bool(int)>& ok, absl::Duration timeout,
                                  absl::string_view what);

 private:
  std::string RegistryTarget() const;
  std::string DispatcherTarget() const;
  int DispatcherMetricsPort() const;
  // Credential flags from --token_dir: the executor token and the Ed25519 key files
  // (scheduler.key/.pub, dispatcher.key/.pub, as scripts/up and scripts/bench make them) that
  // each component takes.
  std::vector<std::string> Credentials(absl::string_view component) const;
  absl::Status Launch(Service& s, const std::string& binary, std::vector<std::string> args,
                      const std::string& log);
  absl::Status StartRegistry();
  absl::Status StartDispatcher();

  const BenchOptions& options_;
  BenchDb& db_;
  const std::string app_;
  Service registry_, dispatcher_;
  Service schedulers_[2];
  std::vector<Service> executors_;
};

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_STACK_H_
