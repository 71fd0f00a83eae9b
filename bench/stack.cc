#include "bench/stack.h"

#include <signal.h>

#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/http_metrics.h"
#include "common/base/status_macros.h"

namespace jobwheel::bench {
namespace {

std::string Addr(int port) { return absl::StrCat("127.0.0.1:", port); }

}  // namespace

Stack::Stack(const BenchOptions& options, BenchDb& db, std::string app)
    : options_(options), db_(db), app_(std::move(app)) {}

std::string Stack::RegistryTarget() const {
  return attached() ? options_.attach_registry : Addr(registry_.port);
}

std::string Stack::DispatcherTarget() const {
  return attached() ? options_.attach_dispatcher : Addr(dispatcher_.port);
}

int Stack::DispatcherMetricsPort() const {
  return attached() ? options_.attach_dispatcher_metrics_port : dispatcher_.metrics_port;
}

std::vector<std::string> Stack::Credentials(absl::string_view component) const {
  const std::string& dir = options_.token_dir;
  if (component == "scheduler") return {"--signing_key_file=" + dir + "/scheduler.key"};
  std::vector<std::string> flags = {"--executor_token_file=" + dir + "/executor"};
  if (component == "registry") {
    flags.push_back("--dispatcher_public_key_file=" + dir + "/dispatcher.pub");
  } else if (component == "dispatcher") {
    flags.push_back("--signing_key_file=" + dir + "/dispatcher.key");
    flags.push_back("--scheduler_public_key_file=" + dir + "/scheduler.pub");
  } else {  // An executor.
    flags.push_back("--dispatcher_public_key_file=" + dir + "/dispatcher.pub");
    flags.push_back("--scheduler_public_key_file=" + dir + "/scheduler.pub");
  }
  return flags;
}

absl::Status Stack::Launch(Service& s, const std::string& binary, std::vector<std::string> args,
                           const std::string& log) {
  s.proc = std::make_unique<testing::Process>();
  RETURN_IF_ERROR(s.proc->Start(options_.bin_dir + "/" + binary, args, log));
  std::ofstream(options_.work_dir + "/pids", std::ios::app) << s.proc->pid() << "\n";
  absl::Status serving = testing::WaitForServing(Addr(s.port), absl::Seconds(20));
  if (!serving.ok()) {
    return absl::DeadlineExceededError(absl::StrCat(s.name, " did not serve on ", Addr(s.port),
                                                    " within 20s (see ", log,
                                                    "): ", serving.message()));
  }
  return absl::OkStatus();
}

absl::Status Stack::StartRegistry() {
  registry_.name = "registry";
  registry_.port = testing::PickFreePort();
  registry_.metrics_port = testing::PickFreePort();
  std::vector<std::string> args = {"--listen=" + Addr(registry_.port), "--db_dsn=" + options_.dsn,
                                   "--metrics_address=" + Addr(registry_.metrics_port),
                                   "--admin_token_file=" + options_.token_dir + "/admin"};
  for (auto& t : Credentials("registry")) args.push_back(t);
  return Launch(registry_, "services/registry/registry", args, options_.work_dir + "/registry.log");
}

absl::Status Stack::StartDispatcher() {
  dispatcher_.name = "dispatcher";
  dispatcher_.port = testing::PickFreePort();
  dispatcher_.metrics_port = testing::PickFreePort();
  std::vector<std::string> args = {"--listen=" + Addr(dispatcher_.port), "--db_dsn=" + options_.dsn,
                                   "--metrics_address=" + Addr(dispatcher_.metrics_port),
                                   "--registry_target=" + Addr(registry_.port)};
  for (auto& t : Credentials("dispatcher")) args.push_back(t);
  return Launch(dispatcher_, "services/dispatcher/dispatcher", args,
                options_.work_dir + "/dispatcher.log");
}

absl::Status Stack::StartScheduler(int index) {
  Service& s = schedulers_[index];
  s.name = ReplicaName(index);
  if (s.port == 0) {
    s.port = testing::PickFreePort();
    s.metrics_port = testing::PickFreePort();
  }
  std::vector<std::string> args = {"--listen=" + Addr(s.port),
                                   "--db_dsn=" + options_.dsn,
                                   "--metrics_address=" + Addr(s.metrics_port),
                                   "--replica_id=" + s.name,
                                   "--dispatcher_target=" + Addr(dispatcher_.port),
                                   "--admin_token_file=" + options_.token_dir + "/admin"};
  for (auto& t : Credentials("scheduler")) args.push_back(t);
  return Launch(s, "services/scheduler/scheduler", args,
                absl::StrCat(options_.work_dir, "/", s.name, ".log"));
}

absl::Status Stack::StartExecutor(Service& s, const std::string& app, bool record) {
  s.port = testing::PickFreePort();
  const std::string dir = absl::StrCat(options_.work_dir, "/", s.name);
  std::vector<std::string> args = {"--listen=" + Addr(s.port),
                                   "--app=" + app,
                                   "--registry_target=" + RegistryTarget(),
                                   "--dispatcher_target=" + DispatcherTarget(),
                                   "--log_dir=" + dir + "/logs",
                                   "--spool_dir=" + dir + "/spool"};
  if (record) {
    s.record_file = dir + ".records";
    args.push_back("--record_file=" + s.record_file);
  }
  for (auto& t : Credentials("executor")) args.push_back(t);
  return Launch(s, "bench/bench_executor", args, dir + ".log");
}

absl::Status Stack::Start() {
  if (!attached()) {
    RETURN_IF_ERROR(StartRegistry());
    RETURN_IF_ERROR(StartDispatcher());
    // Two replicas: sched-a leads (started first), sched-b stands by for the failover.
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
  executors_.resize(options_.executors);
  for (size_t i = 0; i < executors_.size(); ++i) {
    executors_[i].name = absl::StrCat("executor-", i);
    RETURN_IF_ERROR(StartExecutor(executors_[i], app_, /*record=*/true));
  }
  const int want = *before + static_cast<int>(executors_.size());
  return WaitExecutorsKnown([want](int n) { return n >= want; }, absl::Seconds(15),
                            "the bench executors known to the dispatcher");
}

void Stack::Stop() {
  std::vector<Service*> all;
  for (auto& e : executors_) all.push_back(&e);
  all.push_back(&schedulers_[1]);
  all.push_back(&schedulers_[0]);
  all.push_back(&dispatcher_);
  all.push_back(&registry_);
  for (Service* s : all) {
    if (s->proc->pid() > 0 && s->proc->running()) s->proc->Signal(SIGTERM);
  }
  for (Service* s : all) {
    if (s->proc->pid() > 0 && !s->proc->Wait(absl::Seconds(10)).ok()) s->proc->Kill();
  }
}

std::vector<RunRecord> Stack::NewRecords() {
  std::vector<RunRecord> out;
  for (Service& e : executors_) {
    std::vector<RunRecord> r = ReadNewRecords(e.record_file, &e.record_offset);
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
    add("registry", registry_);
    add("dispatcher", dispatcher_);
    add("scheduler_a", schedulers_[0]);
    add("scheduler_b", schedulers_[1]);
  }
  for (auto& e : executors_) add("executors", e);
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
