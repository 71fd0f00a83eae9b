// The jobwheel benchmark harness (scripts/bench runs it). It starts the stack from bazel-bin
// (registry, dispatcher, two schedulers, M bench executors) against a PostgreSQL database,
// defines jobs directly in the database, and measures:
//   refs        pgbench simple-update tps and the raw gRPC unary round-trip rate (grpc_echo)
//   throughput  N every-second jobs (spread evenly over the second) for T seconds: fires/s
//               handed to executors, runs completed (result persisted) per second, lost/dup;
//   precision   from the same run: executor handler start − scheduled time
//   burst       N cron `* * * * * ?` jobs, all due on the same second: lateness of the burst
//   peak        the throughput run at higher offered rates
//   detection   executor kill -9 / SIGSTOP → the dispatcher's executors_known drops (ms)
//   failover    kill -9 of the leader scheduler under load: gap, lost/duplicate fires
//   memory      100,000 jobs defined (each every 50 s: 2,000 fires/s): peak RSS of the scheduler
// plus CPU seconds and peak RSS of every process per load scenario. One summary line per
// scenario as key=value pairs on stdout and everything as JSON under --results_dir.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "common/proto_time.h"
#include "common/testing/process.h"
#include "pqxx/pqxx"

ABSL_FLAG(std::string, bin_dir, "bazel-bin", "Where the binaries are (bazel-bin)");
ABSL_FLAG(std::string, work_dir, "", "Scratch directory: logs, run records (required)");
ABSL_FLAG(std::string, dsn, "", "The jobwheel database (required)");
ABSL_FLAG(std::string, pg_data, "",
          "PostgreSQL data directory (its postmaster.pid gives the "
          "server's pid for CPU accounting); empty: not measured");
ABSL_FLAG(std::string, pgbench_dsn, "", "Database for the pgbench reference; empty: skipped");
ABSL_FLAG(std::string, pgbench, "pgbench", "pgbench binary");
ABSL_FLAG(std::string, token_dir, "", "Directory with admin, cluster and executor token files");
ABSL_FLAG(std::string, results_dir, "bench/results", "Where the JSON result goes");
ABSL_FLAG(std::string, scenarios, "refs,throughput,burst,peak,detection,failover,memory",
          "Comma list of scenarios to run");
ABSL_FLAG(int, executors, 2, "Bench executors the load is spread over (ROUND routing)");
ABSL_FLAG(int, jobs, 5000, "throughput: every-second jobs, i.e. the offered fires/s");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(60), "throughput: measured window");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(8), "Load scenarios: time before the window");
ABSL_FLAG(std::string, peak_rates, "10000", "peak: offered fires/s, in increasing order");
ABSL_FLAG(absl::Duration, peak_duration, absl::Seconds(15), "peak: measured window per rate");
ABSL_FLAG(int, burst_jobs, 5000, "burst: cron jobs all due on the same second");
ABSL_FLAG(absl::Duration, burst_duration, absl::Seconds(15), "burst: measured window");
ABSL_FLAG(int, failover_jobs, 1000, "failover: every-second jobs running during the kill");
ABSL_FLAG(int, detection_trials, 3, "detection: trials per signal");
ABSL_FLAG(int, memory_jobs, 100000, "memory: jobs defined");
ABSL_FLAG(int, memory_period_s, 50, "memory: each job fires every this many seconds");
ABSL_FLAG(absl::Duration, memory_duration, absl::Seconds(30), "memory: measured window");
ABSL_FLAG(std::string, attach_registry, "",
          "Attach to a running stack: its registry host:port (with --attach_dispatcher); only "
          "the bench executors are started, and failover is skipped");
ABSL_FLAG(std::string, attach_dispatcher, "", "Attach: the dispatcher host:port");
ABSL_FLAG(int, attach_dispatcher_metrics_port, 0, "Attach: the dispatcher's metrics port");

namespace jobwheel::bench {
namespace {

using testing::Process;

std::string Addr(int port) { return absl::StrCat("127.0.0.1:", port); }

// Appends a started child's pid to <work_dir>/pids: scripts/bench ends exactly those if the
// harness itself dies before it could stop them.
void RememberPid(pid_t pid) {
  std::ofstream(absl::GetFlag(FLAGS_work_dir) + "/pids", std::ios::app) << pid << "\n";
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

std::string LoadAvg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return absl::StrCat(a, "/", b, "/", c);
}

// Collects one scenario's results: printed as "name: k=v ..." and written as JSON.
class Report {
 public:
  void Add(const std::string& key, double v, int digits = 0) {
    fields_.emplace_back(key, Fixed(v, digits));
  }
  void Add(const std::string& key, int64_t v) { fields_.emplace_back(key, absl::StrCat(v)); }
  void AddText(const std::string& key, const std::string& v) {
    fields_.emplace_back(key, absl::StrCat("\"", v, "\""));
  }
  std::string Line(const std::string& name) const {
    std::vector<std::string> kv;
    for (const auto& [k, v] : fields_) {
      std::string value = v;
      if (!value.empty() && value.front() == '"') value = value.substr(1, value.size() - 2);
      if (value.find(' ') != std::string::npos) value = absl::StrCat("\"", value, "\"");
      kv.push_back(absl::StrCat(k, "=", value));
    }
    return absl::StrCat(name, ": ", absl::StrJoin(kv, " "));
  }
  std::string Json() const {
    std::vector<std::string> kv;
    for (const auto& [k, v] : fields_) kv.push_back(absl::StrCat("\"", k, "\": ", v));
    return absl::StrCat("{", absl::StrJoin(kv, ", "), "}");
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

struct Results {
  std::vector<std::pair<std::string, Report>> scenarios;
  void Emit(const std::string& name, const Report& r) {
    std::printf("%s\n", r.Line(name).c_str());
    std::fflush(stdout);
    scenarios.emplace_back(name, r);
  }
};

// One process of the stack and its ports.
struct Service {
  std::string name;
  std::unique_ptr<Process> proc = std::make_unique<Process>();
  int port = 0;
  int metrics_port = 0;
  std::string record_file;  // Bench executors only.
  size_t record_offset = 0;
};

class Bench {
 public:
  Bench()
      : bin_(absl::GetFlag(FLAGS_bin_dir)),
        work_(absl::GetFlag(FLAGS_work_dir)),
        dsn_(absl::GetFlag(FLAGS_dsn)),
        tok_(absl::GetFlag(FLAGS_token_dir)) {}

  int Run();

 private:
  // ---- stack
  bool StartStack();
  bool StartRegistry();
  bool StartDispatcher();
  bool StartScheduler(Service& s, const std::string& replica);
  bool StartExecutor(Service& s, const std::string& app, bool record);
  void StopAll();
  std::vector<std::string> Tokens() const {
    return {"--executor_token_file=" + tok_ + "/executor",
            "--cluster_token_file=" + tok_ + "/cluster"};
  }
  bool attached() const { return !absl::GetFlag(FLAGS_attach_registry).empty(); }
  std::string RegistryTarget() const {
    return attached() ? absl::GetFlag(FLAGS_attach_registry) : Addr(registry_.port);
  }
  std::string DispatcherTarget() const {
    return attached() ? absl::GetFlag(FLAGS_attach_dispatcher) : Addr(dispatcher_.port);
  }
  int DispatcherMetricsPort() const {
    return attached() ? absl::GetFlag(FLAGS_attach_dispatcher_metrics_port)
                      : dispatcher_.metrics_port;
  }
  absl::optional<double> DispatcherMetric(const std::string& name);
  bool WaitExecutorsKnown(int want, absl::Duration timeout);

  // ---- database
  int64_t Count(const std::string& sql);
  void Exec(const std::string& sql);
  void ResetLoad();

  // ---- resources
  struct ProcSet {
    std::map<std::string, std::vector<pid_t>> pids;  // Component → pids.
  };
  ProcSet Processes();
  std::map<std::string, std::map<pid_t, ProcSample>> Sample(const ProcSet& set);
  void ResetPeaks(const ProcSet& set);
  void AddResources(Report& r, const std::map<std::string, std::map<pid_t, ProcSample>>& before,
                    const std::map<std::string, std::map<pid_t, ProcSample>>& after,
                    absl::Duration window);

  // ---- scenarios
  struct LoadSpec {
    std::string tag;
    int jobs = 0;
    int64_t period_s = 1;
    bool cron_burst = false;  // All due on the same second (cron) instead of spread evenly.
    absl::Duration warmup;
    absl::Duration window;
  };
  struct LoadOutcome {
    int64_t expected = 0;
    int64_t received = 0;        // Distinct (job, scheduled time) the executors ran.
    int64_t duplicates = 0;      // Extra executions of a (job, scheduled time).
    int64_t db_fires = 0;        // Fire rows in the window.
    int64_t db_fire_dups = 0;    // Fire rows beyond one per (job, scheduled time).
    int64_t db_failed = 0;       // Fires FAILED (no executor etc.).
    int64_t db_skipped = 0;      // Fires SKIPPED (misfire).
    double achieved_per_s = 0;   // Fires handed to executors per second in the window.
    double completed_per_s = 0;  // Runs whose SUCCEEDED result was persisted, per second.
    Percentiles lateness_ms;
  };
  LoadOutcome RunLoad(const LoadSpec& spec, Report& report);
  void Refs(Results& out);
  void Throughput(Results& out);
  void Burst(Results& out);
  void Peak(Results& out);
  void Detection(Results& out);
  void Failover(Results& out);
  void Memory(Results& out);

  std::vector<RunRecord> NewRecords();

  const std::string bin_, work_, dsn_, tok_;
  // The app of the bench executors and jobs, unique per run: executors another stack may have
  // registered never get the load.
  const std::string app_ = absl::StrCat("bench-", getpid());
  std::unique_ptr<pqxx::connection> db_;
  Service registry_, dispatcher_;
  Service schedulers_[2];
  std::vector<Service> executors_;
  double pgbench_tps_ = 0;
  double grpc_calls_per_s_ = 0;
  int64_t min_job_id_ = 0;  // Of the current load scenario.
  int64_t max_job_id_ = 0;
};

// ------------------------------------------------------------------------- stack

bool Bench::StartRegistry() {
  registry_.name = "registry";
  registry_.port = testing::PickFreePort();
  registry_.metrics_port = testing::PickFreePort();
  std::vector<std::string> args = {"--listen=" + Addr(registry_.port), "--db_dsn=" + dsn_,
                                   "--metrics_address=" + Addr(registry_.metrics_port),
                                   "--admin_token_file=" + tok_ + "/admin"};
  for (auto& t : Tokens()) args.push_back(t);
  if (!registry_.proc->Start(bin_ + "/services/registry/registry", args, work_ + "/registry.log")
           .ok()) {
    return false;
  }
  RememberPid(registry_.proc->pid());
  return testing::WaitForServing(Addr(registry_.port), absl::Seconds(20)).ok();
}

bool Bench::StartDispatcher() {
  dispatcher_.name = "dispatcher";
  dispatcher_.port = testing::PickFreePort();
  dispatcher_.metrics_port = testing::PickFreePort();
  std::vector<std::string> args = {"--listen=" + Addr(dispatcher_.port), "--db_dsn=" + dsn_,
                                   "--metrics_address=" + Addr(dispatcher_.metrics_port),
                                   "--registry_target=" + Addr(registry_.port)};
  for (auto& t : Tokens()) args.push_back(t);
  if (!dispatcher_.proc
           ->Start(bin_ + "/services/dispatcher/dispatcher", args, work_ + "/dispatcher.log")
           .ok()) {
    return false;
  }
  RememberPid(dispatcher_.proc->pid());
  return testing::WaitForServing(Addr(dispatcher_.port), absl::Seconds(20)).ok();
}

bool Bench::StartScheduler(Service& s, const std::string& replica) {
  s.name = replica;
  s.proc = std::make_unique<Process>();
  if (s.port == 0) {
    s.port = testing::PickFreePort();
    s.metrics_port = testing::PickFreePort();
  }
  std::vector<std::string> args = {"--listen=" + Addr(s.port),
                                   "--db_dsn=" + dsn_,
                                   "--metrics_address=" + Addr(s.metrics_port),
                                   "--replica_id=" + replica,
                                   "--dispatcher_target=" + Addr(dispatcher_.port),
                                   "--admin_token_file=" + tok_ + "/admin",
                                   "--cluster_token_file=" + tok_ + "/cluster"};
  if (!s.proc
           ->Start(bin_ + "/services/scheduler/scheduler", args,
                   absl::StrCat(work_, "/", replica, ".log"))
           .ok()) {
    return false;
  }
  RememberPid(s.proc->pid());
  return testing::WaitForServing(Addr(s.port), absl::Seconds(20)).ok();
}

bool Bench::StartExecutor(Service& s, const std::string& app, bool record) {
  s.proc = std::make_unique<Process>();
  s.port = testing::PickFreePort();
  const std::string dir = absl::StrCat(work_, "/", s.name);
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
  for (auto& t : Tokens()) args.push_back(t);
  if (!s.proc->Start(bin_ + "/bench/bench_executor", args, dir + ".log").ok()) return false;
  RememberPid(s.proc->pid());
  return testing::WaitForServing(Addr(s.port), absl::Seconds(20)).ok();
}

bool Bench::StartStack() {
  if (!attached()) {
    if (!StartRegistry()) return false;
    if (!StartDispatcher()) return false;
    // Two replicas: sched-a leads (started first), sched-b stands by for the failover.
    if (!StartScheduler(schedulers_[0], "sched-a")) return false;
    if (!testing::Eventually(
            [&] {
              return Count("SELECT count(*) FROM leadership WHERE holder_id = 'sched-a'") == 1;
            },
            absl::Seconds(10))) {
      std::fprintf(stderr, "bench: sched-a did not become leader\n");
      return false;
    }
    if (!StartScheduler(schedulers_[1], "sched-b")) return false;
  }
  const double known_before = DispatcherMetric("jobwheel_dispatcher_executors_known").value_or(0);
  executors_.resize(absl::GetFlag(FLAGS_executors));
  for (size_t i = 0; i < executors_.size(); ++i) {
    executors_[i].name = absl::StrCat("executor-", i);
    if (!StartExecutor(executors_[i], app_, /*record=*/true)) return false;
  }
  return WaitExecutorsKnown(static_cast<int>(known_before) + static_cast<int>(executors_.size()),
                            absl::Seconds(15));
}

void Bench::StopAll() {
  std::vector<Service*> all;
  for (auto& e : executors_) all.push_back(&e);
  all.push_back(&schedulers_[1]);
  all.push_back(&schedulers_[0]);
  all.push_back(&dispatcher_);
  all.push_back(&registry_);
  for (Service* s : all) {
    if (s->proc->pid() > 0) s->proc->Signal(SIGTERM);
  }
  for (Service* s : all) {
    if (s->proc->pid() > 0 && !s->proc->Wait(absl::Seconds(10)).ok()) s->proc->Kill();
  }
}

absl::optional<double> Bench::DispatcherMetric(const std::string& name) {
  const int port = DispatcherMetricsPort();
  if (port == 0) return absl::nullopt;
  auto body = HttpGet(port, "/metrics");
  if (!body.ok()) return absl::nullopt;
  return MetricSum(*body, name);
}

bool Bench::WaitExecutorsKnown(int want, absl::Duration timeout) {
  return testing::Eventually(
      [&] {
        auto v = DispatcherMetric("jobwheel_dispatcher_executors_known");
        return v.has_value() && static_cast<int>(*v) == want;
      },
      timeout);
}

// ------------------------------------------------------------------------- database

int64_t Bench::Count(const std::string& sql) {
  try {
    pqxx::nontransaction tx(*db_);
    pqxx::result r = tx.exec(sql);
    return r.empty() || r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: %s: %s\n", sql.c_str(), e.what());
    return -1;
  }
}

void Bench::Exec(const std::string& sql) {
  try {
    pqxx::nontransaction tx(*db_);
    tx.exec(sql);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: %s: %s\n", sql.c_str(), e.what());
  }
}

// Ends the previous load: no job enabled, nothing pending or running, empty fires and runs.
void Bench::ResetLoad() {
  Exec(absl::StrCat("UPDATE jobs SET enabled = false WHERE app = '", app_, "'"));
  Exec("DELETE FROM fires WHERE status = 1");
  testing::Eventually(
      [&] { return Count("SELECT count(*) FROM runs WHERE status IN (1, 2)") == 0; },
      absl::Seconds(20));
  Exec(absl::StrCat("DELETE FROM jobs WHERE app = '", app_, "'"));
  Exec("TRUNCATE fires, runs");
  Exec("VACUUM ANALYZE jobs");
}

std::vector<RunRecord> Bench::NewRecords() {
  std::vector<RunRecord> out;
  for (Service& e : executors_) {
    std::ifstream in(e.record_file);
    if (!in) continue;
    in.seekg(static_cast<std::streamoff>(e.record_offset));
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    // Only whole lines: the executor may be mid-write.
    const size_t end = text.rfind('\n');
    if (end == std::string::npos) continue;
    e.record_offset += end + 1;
    std::vector<RunRecord> r = ParseRecords(absl::string_view(text).substr(0, end + 1));
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

// ------------------------------------------------------------------------- resources

Bench::ProcSet Bench::Processes() {
  ProcSet set;
  auto add = [&](const std::string& name, Service& s) {
    if (s.proc->pid() > 0 && s.proc->running()) set.pids[name].push_back(s.proc->pid());
  };
  if (!attached()) {
    add("registry", registry_);
    add("dispatcher", dispatcher_);
    add("scheduler_a", schedulers_[0]);
    add("scheduler_b", schedulers_[1]);
  }
  for (auto& e : executors_) add("executors", e);
  const std::string pg_data = absl::GetFlag(FLAGS_pg_data);
  if (!pg_data.empty()) {
    std::ifstream in(pg_data + "/postmaster.pid");
    pid_t postmaster = 0;
    if (in >> postmaster && postmaster > 0) {
      set.pids["postgres"].push_back(postmaster);
      for (pid_t c : ChildrenOf(postmaster)) set.pids["postgres"].push_back(c);
    }
  }
  return set;
}

std::map<std::string, std::map<pid_t, ProcSample>> Bench::Sample(const ProcSet& set) {
  std::map<std::string, std::map<pid_t, ProcSample>> out;
  for (const auto& [name, pids] : set.pids) {
    for (pid_t p : pids) {
      auto s = ReadProc(p);
      if (s.ok()) out[name][p] = *s;
    }
  }
  return out;
}

void Bench::ResetPeaks(const ProcSet& set) {
  for (const auto& [name, pids] : set.pids) {
    for (pid_t p : pids) ResetPeakRss(p);
  }
}

void Bench::AddResources(Report& r,
                         const std::map<std::string, std::map<pid_t, ProcSample>>& before,
                         const std::map<std::string, std::map<pid_t, ProcSample>>& after,
                         absl::Duration window) {
  for (const auto& [name, procs] : after) {
    double cpu = 0;
    int64_t peak_kb = 0;
    auto b = before.find(name);
    for (const auto& [pid, s] : procs) {
      double start = 0;
      if (b != before.end()) {
        auto it = b->second.find(pid);
        if (it != b->second.end()) start = it->second.cpu_seconds;
      }
      cpu += s.cpu_seconds - start;
      peak_kb = name == "postgres" ? peak_kb + s.rss_kb : std::max(peak_kb, s.peak_rss_kb);
    }
    r.Add(name + "_cpu_s", cpu, 1);
    r.Add(name + "_cpu_pct", 100.0 * cpu / absl::ToDoubleSeconds(window), 0);
    // PostgreSQL: the sum of its processes' current RSS (shared buffers counted per process,
    // so an overestimate); the others: the largest peak RSS of the component's processes.
    r.Add(name + (name == "postgres" ? "_rss_mb" : "_peak_rss_mb"), peak_kb / 1024.0, 0);
  }
}

// ------------------------------------------------------------------------- load

Bench::LoadOutcome Bench::RunLoad(const LoadSpec& spec, Report& report) {
  LoadOutcome out;
  ResetLoad();
  NewRecords();  // Skip whatever came before.
  const ProcSet procs = Processes();
  ResetPeaks(procs);

  // First due time: a whole second, far enough ahead for the claim to pre-read it.
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()) + 4);
  const int64_t period_us = spec.period_s * 1000000;
  const std::string start = ToPgTimestamp(t0);
  if (spec.cron_burst) {
    Exec(absl::StrCat(
        "INSERT INTO jobs (app, name, schedule_kind, cron_expression, handler, routing_strategy, "
        "next_fire_at) SELECT '",
        app_, "', '", spec.tag, "-' || g, 'CRON', '* * * * * ?', 'noop', 3, '", start,
        "'::timestamptz FROM generate_series(1, ", spec.jobs, ") AS g"));
  } else {
    // Fixed rate, start times spread evenly over one period: a steady spec.jobs/period rate.
    Exec(absl::StrCat(
        "INSERT INTO jobs (app, name, schedule_kind, fix_rate_seconds, fix_rate_start, handler, "
        "routing_strategy, next_fire_at) SELECT '",
        app_, "', '", spec.tag, "-' || g, 'FIX_RATE', ", spec.period_s,
        ", s, 'noop', 3, s FROM (SELECT g, '", start, "'::timestamptz + ((g - 1)::bigint * ",
        period_us, " / ", spec.jobs, ") * interval '1 microsecond' AS s FROM generate_series(1, ",
        spec.jobs, ") AS g) AS x"));
  }
  min_job_id_ = Count(absl::StrCat("SELECT min(id) FROM jobs WHERE app = '", app_, "'"));
  max_job_id_ = Count(absl::StrCat("SELECT max(id) FROM jobs WHERE app = '", app_, "'"));
  const std::string jobs_filter =
      absl::StrCat("job_id BETWEEN ", min_job_id_, " AND ", max_job_id_);

  const absl::Time ws = t0 + spec.warmup;
  const absl::Time we = ws + spec.window;
  const std::string ws_sql = absl::StrCat("'", ToPgTimestamp(ws), "'::timestamptz");
  const std::string we_sql = absl::StrCat("'", ToPgTimestamp(we), "'::timestamptz");
  absl::SleepFor(ws - absl::Now());
  const std::string load_start = LoadAvg();
  // Database connections are opened lazily: take the process list again now.
  auto before = Sample(Processes());
  const int64_t succeeded_before =
      Count(absl::StrCat("SELECT count(*) FROM runs WHERE status = 3 AND ", jobs_filter));
  absl::SleepFor(we - absl::Now());
  auto after = Sample(Processes());
  const int64_t succeeded_after =
      Count(absl::StrCat("SELECT count(*) FROM runs WHERE status = 3 AND ", jobs_filter));
  const std::string load_end = LoadAvg();

  // Stop the load; what was due in the window may still finish.
  Exec(absl::StrCat("UPDATE jobs SET enabled = false WHERE app = '", app_, "'"));
  Exec(absl::StrCat("DELETE FROM fires WHERE status = 1 AND scheduled_at >= ", we_sql));
  testing::Eventually(
      [&] {
        return Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = 1 AND ",
                                  jobs_filter)) == 0 &&
               Count(absl::StrCat("SELECT count(*) FROM runs WHERE status IN (1, 2) AND ",
                                  jobs_filter)) == 0;
      },
      absl::Seconds(30));
  absl::SleepFor(absl::Milliseconds(500));  // The executors flush records every 200 ms.

  const double window_s = absl::ToDoubleSeconds(spec.window);
  out.expected = static_cast<int64_t>(spec.jobs) * static_cast<int64_t>(window_s) / spec.period_s;
  {
    pqxx::nontransaction tx(*db_);
    pqxx::result r = tx.exec(absl::StrCat(
        "SELECT count(*), count(DISTINCT (job_id, scheduled_at)), "
        "count(*) FILTER (WHERE status = 4), count(*) FILTER (WHERE status = 3) FROM fires WHERE ",
        jobs_filter, " AND scheduled_at >= ", ws_sql, " AND scheduled_at < ", we_sql));
    out.db_fires = r[0][0].as<int64_t>();
    out.db_fire_dups = out.db_fires - r[0][1].as<int64_t>();
    out.db_failed = r[0][2].as<int64_t>();
    out.db_skipped = r[0][3].as<int64_t>();
    pqxx::result d = tx.exec(absl::StrCat("SELECT count(*) FROM fires WHERE ", jobs_filter,
                                          " AND status = 2 AND dispatch_time >= ", ws_sql,
                                          " AND dispatch_time < ", we_sql));
    out.achieved_per_s = d[0][0].as<int64_t>() / window_s;
  }
  out.completed_per_s = (succeeded_after - succeeded_before) / window_s;

  const std::vector<RunRecord> records = NewRecords();
  absl::flat_hash_map<std::pair<int64_t, int64_t>, int> seen;
  std::vector<double> lateness;
  const int64_t ws_us = absl::ToUnixMicros(ws), we_us = absl::ToUnixMicros(we);
  for (const RunRecord& r : records) {
    if (r.job_id < min_job_id_ || r.job_id > max_job_id_) continue;
    if (r.scheduled_us < ws_us || r.scheduled_us >= we_us) continue;
    if (seen[{r.job_id, r.scheduled_us}]++ == 0) {
      lateness.push_back((r.received_us - r.scheduled_us) / 1000.0);
    }
  }
  out.received = static_cast<int64_t>(seen.size());
  for (const auto& [key, n] : seen) out.duplicates += n - 1;
  out.lateness_ms = ComputePercentiles(lateness);

  report.Add("jobs", static_cast<int64_t>(spec.jobs));
  report.Add("seconds", window_s, 0);
  report.Add("expected_per_s", out.expected / window_s, 0);
  report.Add("achieved_per_s", out.achieved_per_s, 0);
  report.Add("completed_per_s", out.completed_per_s, 0);
  report.Add("p50_ms", out.lateness_ms.p50, 1);
  report.Add("p90_ms", out.lateness_ms.p90, 1);
  report.Add("p99_ms", out.lateness_ms.p99, 1);
  report.Add("max_ms", out.lateness_ms.max, 1);
  report.Add("lost", out.expected - out.received);
  report.Add("dup", out.duplicates);
  report.Add("db_fires", out.db_fires);
  report.Add("db_fire_dups", out.db_fire_dups);
  report.Add("db_failed", out.db_failed);
  report.Add("db_skipped", out.db_skipped);
  AddResources(report, before, after, spec.window);
  report.AddText("load_avg_start", load_start);
  report.AddText("load_avg_end", load_end);
  return out;
}

// ------------------------------------------------------------------------- scenarios

void Bench::Refs(Results& out) {
  // pgbench simple-update (-N): UPDATE pgbench_accounts, SELECT, INSERT pgbench_history per
  // transaction; 8 clients, 2 threads, 10 s.
  const std::string pg_dsn = absl::GetFlag(FLAGS_pgbench_dsn);
  if (!pg_dsn.empty()) {
    const std::string pgbench = absl::GetFlag(FLAGS_pgbench);
    const std::string log = work_ + "/pgbench.log";
    const std::string init = absl::StrCat(pgbench, " -i -s 5 -q '", pg_dsn, "' > ", log, " 2>&1");
    const std::string run =
        absl::StrCat(pgbench, " -N -n -c 8 -j 2 -T 10 '", pg_dsn, "' >> ", log, " 2>&1");
    if (std::system(init.c_str()) == 0 && std::system(run.c_str()) == 0) {
      std::ifstream in(log);
      std::string line;
      while (std::getline(in, line)) {
        absl::string_view v(line);
        if (absl::ConsumePrefix(&v, "tps = ")) {
          const size_t sp = v.find(' ');
          (void)absl::SimpleAtod(v.substr(0, sp), &pgbench_tps_);
        }
      }
    }
    Report r;
    r.Add("tps", pgbench_tps_, 0);
    r.AddText("mode", "simple-update -N, 8 clients, 2 threads, 10 s, scale 5");
    r.AddText("load_avg", LoadAvg());
    out.Emit("ref_pgbench", r);
  }
  // Raw gRPC: 64 calls in flight against a byte-echo server, 5 s.
  {
    Process server;
    const std::string port_file = work_ + "/echo.port";
    std::remove(port_file.c_str());
    if (server
            .Start(bin_ + "/bench/grpc_echo", {"--mode=server", "--port_file=" + port_file},
                   work_ + "/echo_server.log")
            .ok() &&
        (RememberPid(server.pid()), true) &&
        testing::Eventually([&] { return std::ifstream(port_file).good(); }, absl::Seconds(10))) {
      absl::SleepFor(absl::Milliseconds(200));
      int port = 0;
      std::ifstream(port_file) >> port;
      const std::string log = work_ + "/echo_client.log";
      const std::string cmd =
          absl::StrCat(bin_, "/bench/grpc_echo --mode=client --target=", Addr(port),
                       " --duration=5s --concurrency=64 > ", log, " 2>&1");
      if (std::system(cmd.c_str()) == 0) {
        std::ifstream in(log);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (absl::string_view kv : absl::StrSplit(text, absl::ByAnyChar(" \n"))) {
          if (absl::ConsumePrefix(&kv, "calls_per_s="))
            (void)absl::SimpleAtod(kv, &grpc_calls_per_s_);
        }
      }
      server.Signal(SIGTERM);
      if (!server.Wait(absl::Seconds(5)).ok()) server.Kill();
    }
    Report r;
    r.Add("calls_per_s", grpc_calls_per_s_, 0);
    r.AddText("mode", "unary byte echo, callback API, 64 in flight, 200-byte payload, 5 s");
    r.AddText("load_avg", LoadAvg());
    out.Emit("ref_grpc", r);
  }
}

void Bench::Throughput(Results& out) {
  LoadSpec spec;
  spec.tag = "throughput";
  spec.jobs = absl::GetFlag(FLAGS_jobs);
  spec.warmup = absl::GetFlag(FLAGS_warmup);
  spec.window = absl::GetFlag(FLAGS_duration);
  Report r;
  LoadOutcome o = RunLoad(spec, r);
  if (pgbench_tps_ > 0) r.Add("of_pgbench_tps", o.achieved_per_s / pgbench_tps_, 2);
  if (grpc_calls_per_s_ > 0) r.Add("of_grpc_calls", o.achieved_per_s / grpc_calls_per_s_, 3);
  out.Emit("throughput", r);
  Report p;
  p.Add("jobs", static_cast<int64_t>(spec.jobs));
  p.Add("runs", static_cast<int64_t>(o.lateness_ms.n));
  p.Add("p50_ms", o.lateness_ms.p50, 1);
  p.Add("p90_ms", o.lateness_ms.p90, 1);
  p.Add("p99_ms", o.lateness_ms.p99, 1);
  p.Add("p999_ms", o.lateness_ms.p999, 1);
  p.Add("max_ms", o.lateness_ms.max, 1);
  p.Add("mean_ms", o.lateness_ms.mean, 1);
  out.Emit("precision", p);
}

void Bench::Burst(Results& out) {
  LoadSpec spec;
  spec.tag = "burst";
  spec.jobs = absl::GetFlag(FLAGS_burst_jobs);
  spec.cron_burst = true;
  spec.warmup = absl::GetFlag(FLAGS_warmup);
  spec.window = absl::GetFlag(FLAGS_burst_duration);
  Report r;
  RunLoad(spec, r);
  out.Emit("burst", r);
}

void Bench::Peak(Results& out) {
  for (absl::string_view rate : absl::StrSplit(absl::GetFlag(FLAGS_peak_rates), ',')) {
    int jobs = 0;
    if (!absl::SimpleAtoi(rate, &jobs) || jobs <= 0) continue;
    LoadSpec spec;
    spec.tag = absl::StrCat("peak", jobs);
    spec.jobs = jobs;
    spec.warmup = absl::GetFlag(FLAGS_warmup);
    spec.window = absl::GetFlag(FLAGS_peak_duration);
    Report r;
    LoadOutcome o = RunLoad(spec, r);
    out.Emit("peak", r);
    // Stop stepping up once the offered rate is clearly not sustained.
    if (o.achieved_per_s < 0.95 * jobs || o.lateness_ms.p99 > 1000) break;
  }
}

void Bench::Detection(Results& out) {
  const int trials = absl::GetFlag(FLAGS_detection_trials);
  Report r;
  for (int sig : {SIGKILL, SIGSTOP}) {
    std::vector<double> ms;
    int undetected = 0;
    for (int t = 0; t < trials; ++t) {
      Service e;
      e.name = absl::StrCat("detect-", sig == SIGKILL ? "kill" : "stop", "-", t);
      const int base =
          static_cast<int>(DispatcherMetric("jobwheel_dispatcher_executors_known").value_or(0));
      if (!StartExecutor(e, "detect", /*record=*/false) ||
          !WaitExecutorsKnown(base + 1, absl::Seconds(15))) {
        std::fprintf(stderr, "bench: detection executor did not come online\n");
        ++undetected;
        e.proc->Kill();
        continue;
      }
      absl::SleepFor(absl::Milliseconds(1500));  // A few beats in.
      const absl::Time sent = absl::Now();
      e.proc->Signal(sig);
      absl::Time seen = absl::InfiniteFuture();
      while (absl::Now() - sent < absl::Seconds(15)) {
        auto v = DispatcherMetric("jobwheel_dispatcher_executors_known");
        if (v.has_value() && static_cast<int>(*v) <= base) {
          seen = absl::Now();
          break;
        }
        absl::SleepFor(absl::Milliseconds(2));
      }
      if (seen == absl::InfiniteFuture()) {
        ++undetected;
      } else {
        ms.push_back(Ms(seen - sent));
      }
      e.proc->Kill();  // SIGCONT + SIGKILL.
      WaitExecutorsKnown(base, absl::Seconds(10));
    }
    const std::string name = sig == SIGKILL ? "kill9" : "sigstop";
    std::vector<std::string> each;
    for (double v : ms) each.push_back(Fixed(v, 0));
    Percentiles p = ComputePercentiles(ms);
    r.AddText(name + "_ms_each", absl::StrJoin(each, ","));
    r.Add(name + "_max_ms", p.max, 0);
    r.Add(name + "_mean_ms", p.mean, 0);
    r.Add(name + "_undetected", static_cast<int64_t>(undetected));
  }
  out.Emit("detection", r);
}

void Bench::Failover(Results& out) {
  if (attached()) return;
  ResetLoad();
  NewRecords();
  const int jobs = absl::GetFlag(FLAGS_failover_jobs);
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()) + 4);
  Exec(absl::StrCat(
      "INSERT INTO jobs (app, name, schedule_kind, fix_rate_seconds, fix_rate_start, handler, "
      "routing_strategy, next_fire_at) SELECT '",
      app_,
      "', 'failover-' || g, 'FIX_RATE', 1, s, "
      "'noop', 3, s FROM (SELECT g, '",
      ToPgTimestamp(t0), "'::timestamptz + ((g - 1)::bigint * 1000000 / ", jobs,
      ") * interval '1 microsecond' AS s FROM generate_series(1, ", jobs, ") AS g) AS x"));
  min_job_id_ = Count(absl::StrCat("SELECT min(id) FROM jobs WHERE app = '", app_, "'"));
  max_job_id_ = Count(absl::StrCat("SELECT max(id) FROM jobs WHERE app = '", app_, "'"));
  const std::string jobs_filter =
      absl::StrCat("job_id BETWEEN ", min_job_id_, " AND ", max_job_id_);

  // Who leads now.
  std::string leader;
  {
    pqxx::nontransaction tx(*db_);
    pqxx::result r = tx.exec("SELECT holder_id, epoch FROM leadership");
    if (!r.empty()) leader = r[0][0].as<std::string>();
  }
  const int victim = leader == "sched-b" ? 1 : 0;
  absl::SleepFor(t0 + absl::Seconds(6) - absl::Now());
  const absl::Time killed = absl::Now();
  schedulers_[victim].proc->Signal(SIGKILL);
  (void)schedulers_[victim].proc->Wait(absl::Seconds(5));
  // The standby takes the lock.
  absl::Time taken = absl::InfiniteFuture();
  testing::Eventually(
      [&] {
        pqxx::nontransaction tx(*db_);
        pqxx::result r = tx.exec(
            "SELECT holder_id, (EXTRACT(EPOCH FROM since) * 1000000)::BIGINT FROM leadership");
        if (r.empty() || r[0][0].as<std::string>() == leader) return false;
        taken = FromMicros(r[0][1].as<int64_t>());
        return true;
      },
      absl::Seconds(15));
  // Fires due from 5 s before the kill to 8 s after it are checked.
  const absl::Time from = killed - absl::Seconds(5);
  const absl::Time to = killed + absl::Seconds(8);
  absl::SleepFor(to + absl::Seconds(1) - absl::Now());
  Exec(absl::StrCat("UPDATE jobs SET enabled = false WHERE app = '", app_, "'"));
  Exec(absl::StrCat("DELETE FROM fires WHERE status = 1 AND scheduled_at >= '",
                    ToPgTimestamp(to + absl::Seconds(1)), "'::timestamptz"));
  testing::Eventually(
      [&] {
        return Count(
                   absl::StrCat("SELECT count(*) FROM fires WHERE status = 1 AND scheduled_at < '",
                                ToPgTimestamp(to), "'::timestamptz AND ", jobs_filter)) == 0 &&
               Count(absl::StrCat("SELECT count(*) FROM runs WHERE status IN (1, 2) AND ",
                                  jobs_filter)) == 0;
      },
      absl::Seconds(30));
  absl::SleepFor(absl::Milliseconds(500));

  // Every job fires once a second: seconds in [from, to) per job, by its phase.
  const int64_t expected = static_cast<int64_t>(jobs) * absl::ToInt64Seconds(to - from);
  const std::string from_sql = absl::StrCat("'", ToPgTimestamp(from), "'::timestamptz");
  const std::string to_sql = absl::StrCat("'", ToPgTimestamp(to), "'::timestamptz");
  int64_t db_fires = 0, db_distinct = 0, db_not_dispatched = 0, db_runs = 0, db_run_fires = 0;
  {
    pqxx::nontransaction tx(*db_);
    pqxx::result r = tx.exec(absl::StrCat(
        "SELECT count(*), count(DISTINCT (job_id, scheduled_at)), "
        "count(*) FILTER (WHERE status <> 2) FROM fires WHERE ",
        jobs_filter, " AND scheduled_at >= ", from_sql, " AND scheduled_at < ", to_sql));
    db_fires = r[0][0].as<int64_t>();
    db_distinct = r[0][1].as<int64_t>();
    db_not_dispatched = r[0][2].as<int64_t>();
    pqxx::result q = tx.exec(
        absl::StrCat("SELECT count(*), count(DISTINCT fire_id) FROM runs WHERE ", jobs_filter,
                     " AND scheduled_time >= ", from_sql, " AND scheduled_time < ", to_sql));
    db_runs = q[0][0].as<int64_t>();
    db_run_fires = q[0][1].as<int64_t>();
  }
  std::vector<RunRecord> records = NewRecords();
  const int64_t from_us = absl::ToUnixMicros(from), to_us = absl::ToUnixMicros(to);
  absl::flat_hash_map<std::pair<int64_t, int64_t>, int> seen;
  std::vector<int64_t> received;
  std::vector<double> late_after_kill;
  const int64_t killed_us = absl::ToUnixMicros(killed);
  for (const RunRecord& r : records) {
    if (r.job_id < min_job_id_ || r.job_id > max_job_id_) continue;
    if (r.scheduled_us < from_us || r.scheduled_us >= to_us) continue;
    if (seen[{r.job_id, r.scheduled_us}]++ > 0) continue;
    received.push_back(r.received_us);
    if (r.scheduled_us >= killed_us)
      late_after_kill.push_back((r.received_us - r.scheduled_us) / 1000.0);
  }
  int64_t dups = 0;
  for (const auto& [k, n] : seen) dups += n - 1;
  // The gap: the longest time without any run starting on an executor, around the kill.
  std::sort(received.begin(), received.end());
  int64_t gap_us = 0;
  for (size_t i = 1; i < received.size(); ++i) {
    if (received[i] < killed_us - 1000000) continue;
    gap_us = std::max(gap_us, received[i] - received[i - 1]);
  }
  Percentiles late = ComputePercentiles(late_after_kill);

  Report r;
  r.Add("jobs", static_cast<int64_t>(jobs));
  r.Add("gap_ms", gap_us / 1000.0, 0);
  r.Add("takeover_ms", taken == absl::InfiniteFuture() ? -1.0 : Ms(taken - killed), 0);
  r.Add("late_after_kill_p99_ms", late.p99, 0);
  r.Add("late_after_kill_max_ms", late.max, 0);
  r.Add("expected_fires", expected);
  r.Add("lost", expected - static_cast<int64_t>(seen.size()));
  r.Add("dup", dups);
  r.Add("db_missing", expected - db_distinct);
  r.Add("db_dup", db_fires - db_distinct);
  r.Add("db_not_dispatched", db_not_dispatched);
  r.Add("db_runs_dup", db_runs - db_run_fires);
  r.AddText("victim", victim == 0 ? "sched-a" : "sched-b");
  out.Emit("failover", r);

  // The killed replica comes back as the standby.
  StartScheduler(schedulers_[victim], victim == 0 ? "sched-a" : "sched-b");
}

void Bench::Memory(Results& out) {
  LoadSpec spec;
  spec.tag = "memory";
  spec.jobs = absl::GetFlag(FLAGS_memory_jobs);
  spec.period_s = absl::GetFlag(FLAGS_memory_period_s);
  spec.warmup = absl::Seconds(10);
  spec.window = absl::GetFlag(FLAGS_memory_duration);
  Report r;
  RunLoad(spec, r);
  {
    pqxx::nontransaction tx(*db_);
    pqxx::result l = tx.exec("SELECT holder_id FROM leadership");
    if (!l.empty()) r.AddText("leader", l[0][0].as<std::string>());
  }
  out.Emit("memory", r);
}

int Bench::Run() {
  if (work_.empty() || dsn_.empty() || tok_.empty()) {
    std::fprintf(stderr, "bench: --work_dir, --dsn and --token_dir are required\n");
    return 2;
  }
  try {
    db_ = std::make_unique<pqxx::connection>(dsn_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: database: %s\n", e.what());
    return 2;
  }
  const std::set<std::string> want = [] {
    std::set<std::string> s;
    for (absl::string_view v : absl::StrSplit(absl::GetFlag(FLAGS_scenarios), ',')) {
      s.insert(std::string(v));
    }
    return s;
  }();
  Results results;
  {
    std::ifstream cpu("/proc/cpuinfo");
    std::string line, model;
    while (std::getline(cpu, line)) {
      if (line.rfind("model name", 0) == 0) {
        model = line.substr(line.find(':') + 2);
        break;
      }
    }
    Report m;
    m.Add("cpus", static_cast<int64_t>(sysconf(_SC_NPROCESSORS_ONLN)));
    m.AddText("model", model);
    m.Add("mem_gb",
          sysconf(_SC_PHYS_PAGES) * static_cast<double>(sysconf(_SC_PAGE_SIZE)) / (1 << 30), 1);
    m.AddText("load_avg", LoadAvg());
    m.Add("executors", static_cast<int64_t>(absl::GetFlag(FLAGS_executors)));
    m.AddText("started", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()));
    results.Emit("machine", m);
  }
  if (want.count("refs")) Refs(results);
  if (!StartStack()) {
    std::fprintf(stderr, "bench: the stack did not start; see %s/*.log\n", work_.c_str());
    StopAll();
    return 1;
  }
  if (want.count("throughput")) Throughput(results);
  if (want.count("burst")) Burst(results);
  // After the failover the leader is the replica that stood by until then: the memory
  // scenario measures a scheduler whose heap the earlier loads did not grow.
  if (want.count("failover")) Failover(results);
  if (want.count("memory")) Memory(results);
  if (want.count("peak")) Peak(results);
  if (want.count("detection")) Detection(results);
  ResetLoad();
  StopAll();

  const std::string dir = absl::GetFlag(FLAGS_results_dir);
  const std::string path =
      absl::StrCat(dir, "/bench-",
                   absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone()), ".json");
  std::ofstream json(path);
  json << "{\n";
  std::map<std::string, int> times;  // A scenario run twice (peak) gets _2, _3...
  for (size_t i = 0; i < results.scenarios.size(); ++i) {
    const std::string& name = results.scenarios[i].first;
    const int n = ++times[name];
    json << "  \"" << name << (n > 1 ? absl::StrCat("_", n) : "")
         << "\": " << results.scenarios[i].second.Json()
         << (i + 1 < results.scenarios.size() ? ",\n" : "\n");
  }
  json << "}\n";
  std::printf("results: %s\n", path.c_str());
  return 0;
}

}  // namespace
}  // namespace jobwheel::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  jobwheel::bench::Bench bench;
  return bench.Run();
}
