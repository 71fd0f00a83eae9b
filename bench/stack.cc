#include "bench/stack.h"

#include <signal.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "bench/http_metrics.h"
#include "common/base/status_macros.h"

namespace jobwheel::bench {
namespace {

// The bench's processes: the binaries under --bin_dir, the credentials of --token_dir (as
// scripts/up and scripts/bench make them), metrics listeners, pids in <work_dir>/pids, and
// two scheduler replicas that Start() starts one after the other.
testing::Stack::Options StackOptions(const BenchOptions& options) {
  testing::Stack::Options o;
  o.bin_dir = options.bin_dir;
  o.dir = options.work_dir;
  o.dsn = options.dsn;
  o.credentials_dir = options.token_dir;
  o.metrics = true;
  o.pids_file = options.work_dir + "/pids";
  o.serving_timeout = absl::Seconds(20);
  o.scheduler.replicas = 2;
  o.scheduler.replica_ids = {Stack::ReplicaName(0), Stack::ReplicaName(1)};
  o.scheduler.start_later = true;
  return o;
}

}  // namespace

Stack::Stack(const BenchOptions& options, BenchDb& db, std::string app)
    : options_(options), db_(db), app_(std::move(app)), stack_(StackOptions(options)) {}

std::string Stack::RegistryTarget() {
  return attached() ? options_.attach_registry : stack_.registry();
}

std::string Stack::DispatcherTarget() {
  return attached() ? options_.attach_dispatcher : stack_.dispatcher();
}

int Stack::DispatcherMetricsPort() {
  return attached() ? options_.attach_dispatcher_metrics_port
                    : stack_.dispatcher_process(0).metrics_port;
}

absl::Status Stack::StartExecutor(Service& s, const std::string& app, bool record) {
  RETURN_IF_ERROR(stack_.Prepare());
  // Admins create apps (a registration never does): the bench's own, in the database it loads.
  for (char c : app) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.') {
      return absl::InvalidArgumentError(absl::StrCat("bench app name ", app, ": bad character"));
    }
  }
  RETURN_IF_ERROR(db_.Exec(
      absl::StrCat("INSERT INTO apps (name) VALUES ('", app, "') ON CONFLICT (name) DO NOTHING")));
  s.port = testing::PickFreePort();
  s.binary = "bench/bench_executor";
  const std::string dir = absl::StrCat(options_.work_dir, "/", s.name);
  s.log = dir + ".log";
  s.args = {"--listen=" + s.address(),
            "--app=" + app,
            "--registry_target=" + RegistryTarget(),
            "--dispatcher_target=" + DispatcherTarget(),
            "--log_dir=" + dir + "/logs",
            "--spool_dir=" + dir + "/spool"};
  if (record) s.args.push_back("--record_file=" + dir + ".records");
  s.args.push_back("--executor_token_file=" + stack_.executor_token_file());
  for (const std::string& f : stack_.ExecutorFlags()) s.args.push_back(f);
  return stack_.Start(s);
}

absl::Status Stack::Start() {
  RETURN_IF_ERROR(stack_.Prepare());
  if (!attached()) {
    // Registry and dispatcher; then two replicas: sched-a leads (started first), sched-b
    // stands by for the failover.
    RETURN_IF_ERROR(stack_.StartServices());
    RETURN_IF_ERROR(StartScheduler(0));
    const bool leads = testing::Eventually(
        [&] {
          absl::StatusOr<int64_t> n =
              db_.Count("SELECT count(*) FROM leadership WHERE holder_id = 'sched-a'");
          return n.ok() && *n == 1;
        },
        absl::Seconds(10));
    if (!leads) return absl::DeadlineExceededError("sched-a did not become leader within 10s");
    RETURN_IF_ERROR(StartScheduler(1));
  }
  absl::optional<int> before = ExecutorsKnown();
  if (!before.has_value()) {
    return absl::UnavailableError(
        absl::StrCat("cannot read the dispatcher's metrics on port ", DispatcherMetricsPort()));
  }
  for (int i = 0; i < options_.executors; ++i) {
    auto e = std::make_unique<Recording>();
    e->service.name = absl::StrCat("executor-", i);
    e->file = absl::StrCat(options_.work_dir, "/", e->service.name, ".records");
    executors_.push_back(std::move(e));
    RETURN_IF_ERROR(StartExecutor(executors_.back()->service, app_, /*record=*/true));
  }
  const int want = *before + static_cast<int>(executors_.size());
  return WaitExecutorsKnown([want](int n) { return n >= want; }, absl::Seconds(15),
                            "the bench executors known to the dispatcher");
}

void Stack::Stop() {
  // The bench executors first, then the services.
  for (auto& e : executors_) {
    if (e->service.proc->pid() > 0 && e->service.proc->running()) e->service.proc->Signal(SIGTERM);
  }
  for (auto& e : executors_) {
    if (e->service.proc->pid() > 0 && !e->service.proc->Wait(absl::Seconds(10)).ok()) {
      e->service.proc->Kill();
    }
  }
  stack_.Stop();
}

std::vector<RunRecord> Stack::NewRecords() {
  std::vector<RunRecord> out;
  for (auto& e : executors_) {
    std::vector<RunRecord> r = ReadNewRecords(e->file, &e->offset);
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

ProcSet Stack::Processes() {
  ProcSet set;
  auto add = [&](const std::string& name, Service& s) {
    if (s.proc->pid() > 0 && s.proc->running()) set[name].push_back(s.proc->pid());
  };
  if (!attached()) {
    add("registry", stack_.registry_process(0));
    add("dispatcher", stack_.dispatcher_process(0));
    add("scheduler_a", stack_.scheduler_process(0));
    add("scheduler_b", stack_.scheduler_process(1));
  }
  for (auto& e : executors_) add("executors", e->service);
  std::vector<pid_t> pg = PostgresPids(options_.pg_data);
  if (!pg.empty()) set["postgres"] = pg;
  return set;
}

absl::optional<int> Stack::ExecutorsKnown() {
  const int port = DispatcherMetricsPort();
  if (port == 0) return absl::nullopt;
  absl::StatusOr<std::string> body = HttpGet(port, "/metrics");
  if (!body.ok()) return absl::nullopt;
  absl::optional<double> v = MetricSum(*body, "jobwheel_dispatcher_executors_known");
  if (!v.has_value()) return absl::nullopt;
  return static_cast<int>(*v);
}

absl::Status Stack::WaitExecutorsKnown(const std::function<bool(int)>& ok, absl::Duration timeout,
                                       absl::string_view what) {
  absl::optional<int> last;
  const bool held = testing::Eventually(
      [&] {
        last = ExecutorsKnown();
        return last.has_value() && ok(*last);
      },
      timeout);
  if (held) return absl::OkStatus();
  return absl::DeadlineExceededError(absl::StrCat(
      "timed out after ", absl::FormatDuration(timeout), " waiting for ", what,
      " (executors_known: ", last.has_value() ? absl::StrCat(*last) : "unreadable", ")"));
}

}  // namespace jobwheel::bench
