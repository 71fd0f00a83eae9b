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
#include "common/testing/stack.h"

namespace jobwheel::bench {

// One process the bench started, and its ports.
using Service = testing::StackProcess;

// The processes under test, started from --bin_dir on free loopback ports with token auth
// through testing::Stack (credentials from --token_dir, logs and pids in --work_dir):
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
  absl::Status StartScheduler(int index) { return stack_.StartScheduler(index); }
  Service& scheduler(int index) { return stack_.scheduler_process(index); }
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
  // A bench executor that records its runs, and how far they were read.
  struct Recording {
    Service service;
    std::string file;
    size_t offset = 0;
  };

  std::string RegistryTarget();
  std::string DispatcherTarget();
  int DispatcherMetricsPort();

  const BenchOptions& options_;
  BenchDb& db_;
  const std::string app_;
  testing::Stack stack_;
  std::vector<std::unique_ptr<Recording>> executors_;
};

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_STACK_H_
