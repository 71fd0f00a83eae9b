// The jobwheel benchmark harness (scripts/bench runs it): flags and wiring only. It starts the
// stack from bazel-bin (stack.h) against a PostgreSQL database, defines its jobs under its own
// app name (bench_db.h), runs the scenarios (scenario_*.cc), prints one key=value line per
// scenario and writes everything, with the run's description (run_info.h), as JSON under
// --results_dir. Exits non-zero, with the reason on stderr, if any scenario fails or times out.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/bench_db.h"
#include "bench/options.h"
#include "bench/report.h"
#include "bench/run_info.h"
#include "bench/scenario.h"
#include "bench/stack.h"
#include "common/base/status_macros.h"

ABSL_FLAG(std::string, bin_dir, "bazel-bin", "Where the binaries are (bazel-bin)");
ABSL_FLAG(std::string, work_dir, "", "Scratch directory: logs, run records (required)");
ABSL_FLAG(std::string, dsn, "", "The jobwheel database (required)");
ABSL_FLAG(std::string, pg_data, "",
          "PostgreSQL data directory (its postmaster.pid gives the server's pid for CPU "
          "accounting); empty: not measured");
ABSL_FLAG(std::string, pgbench_dsn, "", "Database for the pgbench reference; empty: skipped");
ABSL_FLAG(std::string, pgbench, "pgbench", "pgbench binary");
ABSL_FLAG(std::string, token_dir, "", "Directory with admin, cluster and executor token files");
ABSL_FLAG(std::string, results_dir, "bench/results", "Where the JSON result goes");
ABSL_FLAG(std::string, git_commit, "", "The commit measured (recorded in the result file)");
ABSL_FLAG(std::string, scenarios,
          "refs,throughput,burst,peak,overload,detection,failover,memory,flood",
          "Comma list of scenarios to run");
ABSL_FLAG(int, executors, 2, "Bench executors the load is spread over (ROUND routing)");
ABSL_FLAG(int, jobs, 5000, "throughput: every-second jobs, i.e. the offered fires/s");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(60), "throughput: measured window");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(8), "Load scenarios: time before the window");
ABSL_FLAG(absl::Duration, completion_grace, absl::Seconds(2),
          "Load scenarios: a fire due in the window counts as completed if its result is "
          "durable by the window's end plus this");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(60),
          "Load scenarios: how long the bench's fires and runs may take to end after a load; "
          "longer fails the run");
ABSL_FLAG(int, peak_start, 2500, "peak: the first rate (fires/s) of the doubling search");
ABSL_FLAG(int, peak_max, 64000, "peak: the highest rate tried");
ABSL_FLAG(double, peak_tolerance, 0.02,
          "peak: offered, achieved and completed rates must agree within this fraction");
ABSL_FLAG(double, peak_resolution, 0.05,
          "peak: bisection stops when the bracket is narrower than this fraction of the best "
          "sustained rate");
ABSL_FLAG(absl::Duration, peak_p99_limit, absl::Seconds(1), "peak: highest p99 lateness");
ABSL_FLAG(absl::Duration, peak_duration, absl::Seconds(15), "peak: measured window per probe");
ABSL_FLAG(absl::Duration, peak_budget, absl::Minutes(6), "peak: time for the whole search");
ABSL_FLAG(std::vector<std::string>, overload_factors, std::vector<std::string>({"2", "4"}),
          "overload: the loads offered, as factors of the searched peak");
ABSL_FLAG(int, overload_peak, 5000,
          "overload: the peak (fires/s) the factors multiply when the peak scenario did not run");
ABSL_FLAG(absl::Duration, overload_warmup, absl::Seconds(20),
          "overload: time under the load before the window");
ABSL_FLAG(absl::Duration, overload_duration, absl::Seconds(15), "overload: measured window");
ABSL_FLAG(absl::Duration, overload_recovery, absl::Seconds(15),
          "overload: after the window, how long half the peak fires (recovery is measured)");
ABSL_FLAG(int, burst_jobs, 5000, "burst: cron jobs all due on the same second");
ABSL_FLAG(absl::Duration, burst_duration, absl::Seconds(15), "burst: measured window");
ABSL_FLAG(int, failover_jobs, 1000, "failover: every-second jobs running during the kill");
ABSL_FLAG(int, detection_trials, 3, "detection: trials per signal");
ABSL_FLAG(int, flood_clients, 200,
          "flood: unauthenticated clients (half GetLeader, half junk tokens) on the leader");
ABSL_FLAG(int, flood_jobs, 500, "flood: every-second jobs firing during the flood");
ABSL_FLAG(absl::Duration, flood_duration, absl::Seconds(15), "flood: measured window");
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

BenchOptions OptionsFromFlags() {
  BenchOptions o;
  o.bin_dir = absl::GetFlag(FLAGS_bin_dir);
  o.work_dir = absl::GetFlag(FLAGS_work_dir);
  o.dsn = absl::GetFlag(FLAGS_dsn);
  o.pg_data = absl::GetFlag(FLAGS_pg_data);
  o.pgbench_dsn = absl::GetFlag(FLAGS_pgbench_dsn);
  o.pgbench = absl::GetFlag(FLAGS_pgbench);
  o.token_dir = absl::GetFlag(FLAGS_token_dir);
  o.results_dir = absl::GetFlag(FLAGS_results_dir);
  o.git_commit = absl::GetFlag(FLAGS_git_commit);
  for (absl::string_view s :
       absl::StrSplit(absl::GetFlag(FLAGS_scenarios), ',', absl::SkipWhitespace())) {
    o.scenarios.insert(std::string(s));
  }
  o.executors = absl::GetFlag(FLAGS_executors);
  o.jobs = absl::GetFlag(FLAGS_jobs);
  o.duration = absl::GetFlag(FLAGS_duration);
  o.warmup = absl::GetFlag(FLAGS_warmup);
  o.completion_grace = absl::GetFlag(FLAGS_completion_grace);
  o.drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  o.peak_start = absl::GetFlag(FLAGS_peak_start);
  o.peak_max = absl::GetFlag(FLAGS_peak_max);
  o.peak_tolerance = absl::GetFlag(FLAGS_peak_tolerance);
  o.peak_resolution = absl::GetFlag(FLAGS_peak_resolution);
  o.peak_p99_limit = absl::GetFlag(FLAGS_peak_p99_limit);
  o.peak_duration = absl::GetFlag(FLAGS_peak_duration);
  o.peak_budget = absl::GetFlag(FLAGS_peak_budget);
  o.overload_factors.clear();
  for (const std::string& f : absl::GetFlag(FLAGS_overload_factors)) {
    int v = 0;
    o.overload_factors.push_back(absl::SimpleAtoi(f, &v) ? v : 0);
  }
  o.overload_peak = absl::GetFlag(FLAGS_overload_peak);
  o.overload_warmup = absl::GetFlag(FLAGS_overload_warmup);
  o.overload_duration = absl::GetFlag(FLAGS_overload_duration);
  o.overload_recovery = absl::GetFlag(FLAGS_overload_recovery);
  o.burst_jobs = absl::GetFlag(FLAGS_burst_jobs);
  o.burst_duration = absl::GetFlag(FLAGS_burst_duration);
  o.failover_jobs = absl::GetFlag(FLAGS_failover_jobs);
  o.detection_trials = absl::GetFlag(FLAGS_detection_trials);
  o.flood_clients = absl::GetFlag(FLAGS_flood_clients);
  o.flood_jobs = absl::GetFlag(FLAGS_flood_jobs);
  o.flood_duration = absl::GetFlag(FLAGS_flood_duration);
  o.memory_jobs = absl::GetFlag(FLAGS_memory_jobs);
  o.memory_period_s = absl::GetFlag(FLAGS_memory_period_s);
  o.memory_duration = absl::GetFlag(FLAGS_memory_duration);
  o.attach_registry = absl::GetFlag(FLAGS_attach_registry);
  o.attach_dispatcher = absl::GetFlag(FLAGS_attach_dispatcher);
  o.attach_dispatcher_metrics_port = absl::GetFlag(FLAGS_attach_dispatcher_metrics_port);
  return o;
}

// Every flag defined in this file with its value (a password in a DSN masked), sorted.
std::vector<std::pair<std::string, std::string>> OwnFlags() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::EndsWith(flag->Filename(), "bench/main.cc")) continue;
    std::string value = flag->CurrentValue();
    const size_t pw = value.find("password=");
    if (pw != std::string::npos) {
      const size_t end = value.find(' ', pw);
      value.replace(pw + 9, end == std::string::npos ? std::string::npos : end - pw - 9, "***");
    }
    out.emplace_back(std::string(name), value);
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status RunScenarios(Context& ctx) {
  const BenchOptions& o = ctx.options;
  if (o.Wants("throughput")) RETURN_IF_ERROR(RunThroughput(ctx));
  if (o.Wants("burst")) RETURN_IF_ERROR(RunBurst(ctx));
  // After the failover the leader is the replica that stood by until then: the memory
  // scenario measures a scheduler whose heap the earlier loads did not grow.
  if (o.Wants("failover")) RETURN_IF_ERROR(RunFailover(ctx));
  if (o.Wants("memory")) RETURN_IF_ERROR(RunMemory(ctx));
  if (o.Wants("peak")) RETURN_IF_ERROR(RunPeak(ctx));
  if (o.Wants("overload")) RETURN_IF_ERROR(RunOverload(ctx));
  if (o.Wants("detection")) RETURN_IF_ERROR(RunDetection(ctx));
  if (o.Wants("flood")) RETURN_IF_ERROR(RunFlood(ctx));
  return absl::OkStatus();
}

int Main() {
  const BenchOptions options = OptionsFromFlags();
  if (absl::Status st = options.Validate(); !st.ok()) {
    std::fprintf(stderr, "bench: %s\n", std::string(st.message()).c_str());
    return 2;
  }
  // The bench's own app: its jobs, executors and clean-up never touch anyone else's rows.
  absl::BitGen gen;
  const std::string app = absl::StrFormat("bench-%08x", absl::Uniform<uint32_t>(gen));
  auto db = BenchDb::Connect(options.dsn, app);
  if (!db.ok()) {
    std::fprintf(stderr, "bench: %s\n", db.status().ToString().c_str());
    return 2;
  }
  Results results;
  Report run = RunReport(options, **db, OwnFlags());
  run.Add("bench_version", static_cast<int64_t>(2));
  results.Emit("run", run);
  results.Emit("machine", MachineReport(options));

  Stack stack(options, **db, app);
  Context ctx{options, stack, **db, results};
  absl::Status status;
  if (options.Wants("refs")) status = RunRefs(ctx);
  if (status.ok()) status = stack.Start();
  if (status.ok()) status = RunScenarios(ctx);
  // Clean up only what this run created, whatever happened.
  absl::Status cleanup = (**db).RemoveOwnLoad(options.drain_timeout);
  stack.Stop();
  // Runs that never ended (a failed run) are the bench's too: delete them without waiting.
  if (!cleanup.ok()) cleanup = (**db).DeleteOwnRows();
  if (cleanup.ok()) cleanup = (**db).RemoveOwnRegistrations({app, app + "-detect"});

  Report outcome;
  outcome.AddText("status", status.ok() ? "ok" : status.ToString());
  if (!cleanup.ok()) outcome.AddText("cleanup", cleanup.ToString());
  results.Keep("outcome", outcome);
  const std::string path =
      absl::StrCat(options.results_dir, "/bench-",
                   absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone()), ".json");
  if (absl::Status w = results.WriteJson(path); !w.ok()) {
    std::fprintf(stderr, "bench: %s\n", w.ToString().c_str());
  } else {
    std::printf("results: %s\n", path.c_str());
  }
  if (!status.ok()) {
    std::fprintf(stderr, "bench: FAILED: %s (logs in %s)\n", status.ToString().c_str(),
                 options.work_dir.c_str());
    return 1;
  }
  if (!cleanup.ok()) {
    std::fprintf(stderr, "bench: FAILED to clean up its own rows: %s\n",
                 cleanup.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace jobwheel::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  return jobwheel::bench::Main();
}
