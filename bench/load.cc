#include "bench/load.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/shed_ranges.h"
#include "common/base/status_macros.h"
#include "common/time/clock.h"

namespace jobwheel::bench {
namespace {

void SleepUntil(absl::Time t) {
  const absl::Duration d = t - RealClock::Get().Now();
  if (d > absl::ZeroDuration()) absl::SleepFor(d);
}

}  // namespace

void AddUsage(Report& report, const std::vector<ComponentUsage>& usage, absl::Duration window) {
  for (const ComponentUsage& u : usage) {
    report.Add(u.name + "_cpu_s", u.cpu_seconds, 1);
    report.Add(u.name + "_cpu_pct", 100.0 * u.cpu_seconds / absl::ToDoubleSeconds(window), 0);
    report.Add(u.name + (u.rss_is_sum ? "_rss_mb" : "_peak_rss_mb"), u.rss_kb / 1024.0, 0);
  }
}

absl::StatusOr<LoadOutcome> RunLoad(Context& ctx, const LoadSpec& spec, Report& report) {
  const BenchOptions& o = ctx.options;
  RETURN_IF_ERROR(ctx.db.RemoveOwnLoad(o.drain_timeout));
  ctx.stack.NewRecords();  // Skip whatever came before.
  ResetPeaks(ctx.stack.Processes());

  // First due time: a whole second, far enough ahead for the claim to pre-read it.
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(RealClock::Get().Now()) + 4);
  std::vector<JobSchedule> jobs;
  if (spec.cron_burst) {
    ASSIGN_OR_RETURN(jobs, ctx.db.CreateBurstJobs(spec.tag, spec.jobs, t0));
  } else {
    ASSIGN_OR_RETURN(jobs, ctx.db.CreateSpreadJobs(spec.tag, spec.jobs, spec.period_s, t0));
  }
  if (static_cast<int>(jobs.size()) != spec.jobs) {
    return absl::InternalError(
        absl::StrCat(spec.tag, ": created ", jobs.size(), " jobs, wanted ", spec.jobs));
  }
  const absl::Time ws = t0 + spec.warmup;
  const absl::Time we = ws + spec.window;
  if (RealClock::Get().Now() > ws) {
    return absl::DeadlineExceededError(
        absl::StrCat(spec.tag, ": defining the jobs took past the window's start"));
  }

  SleepUntil(ws);
  const std::string load_start = LoadAvg();
  // Database connections are opened lazily: take the process list again now.
  const Samples before = SampleAll(ctx.stack.Processes());
  SleepUntil(we);
  const Samples after = SampleAll(ctx.stack.Processes());
  const std::string load_end = LoadAvg();

  // Stop the load; what was due in the window may still finish, within the grace to count.
  RETURN_IF_ERROR(ctx.db.StopLoad(we));
  SleepUntil(we + o.completion_grace);
  ASSIGN_OR_RETURN(const int64_t completed, ctx.db.CountCompleted(ws, we));
  absl::Status drained = ctx.db.WaitDrained(we, o.drain_timeout);
  if (!drained.ok()) {
    return absl::Status(drained.code(), absl::StrCat(spec.tag, ": ", drained.message()));
  }
  absl::SleepFor(absl::Milliseconds(500));  // The executors flush records every 200 ms.
  ASSIGN_OR_RETURN(const int64_t db_started, ctx.db.CountStarted(ws, we));

  LoadOutcome out;
  out.window_s = absl::ToDoubleSeconds(spec.window);
  const int64_t t0_us = absl::ToUnixMicros(t0);
  const int64_t ws_us = absl::ToUnixMicros(ws), we_us = absl::ToUnixMicros(we);

  const std::vector<FireKey> expected = ExpectedFires(jobs, t0_us, we_us);
  int64_t offered = 0;
  for (const FireKey& k : expected) offered += k.second >= ws_us ? 1 : 0;
  out.offered_per_s = offered / out.window_s;

  const Executions runs = CollectExecutions(ctx.stack.NewRecords(), jobs);
  int64_t started = 0;
  std::vector<double> lateness;
  for (const auto& [key, start_us] : runs.first_start_us) {
    if (start_us >= ws_us && start_us < we_us) ++started;
    if (key.second >= ws_us && key.second < we_us) {
      lateness.push_back((start_us - key.second) / 1000.0);
    }
  }
  out.achieved_per_s = started / out.window_s;
  out.db_achieved_per_s = db_started / out.window_s;
  out.completed_per_s = completed / out.window_s;
  out.lateness_ms = ComputePercentiles(lateness);
  out.executed = CompareFireSets(expected, runs.keys, t0_us, we_us);

  ASSIGN_OR_RETURN(BenchDb::FireRows rows, ctx.db.ReadFires(t0, we));
  // A range row stands for each due time it names (the record is one row per job and range).
  const absl::flat_hash_set<FireKey> in_ranges = CoveredFires(rows.ranges, jobs);
  int64_t range_skipped = 0;  // Those due in the load (a range may reach past its end).
  for (const FireKey& k : in_ranges) {
    rows.keys.push_back(k);
    range_skipped += k.second >= t0_us && k.second < we_us ? 1 : 0;
  }
  out.fire_rows = CompareFireSets(expected, rows.keys, t0_us, we_us);
  out.db_failed = rows.failed;
  out.db_skipped = rows.skipped + range_skipped;
  out.db_pending = rows.pending;

  report.Add("jobs", static_cast<int64_t>(spec.jobs));
  report.Add("seconds", out.window_s, 0);
  report.Add("offered_per_s", out.offered_per_s, 0);
  report.Add("achieved_per_s", out.achieved_per_s, 0);
  report.Add("completed_per_s", out.completed_per_s, 0);
  report.Add("db_achieved_per_s", out.db_achieved_per_s, 0);
  report.Add("p50_ms", out.lateness_ms.p50, 1);
  report.Add("p90_ms", out.lateness_ms.p90, 1);
  report.Add("p99_ms", out.lateness_ms.p99, 1);
  report.Add("max_ms", out.lateness_ms.max, 1);
  report.Add("checked", out.executed.expected);
  report.Add("lost", out.executed.missing);
  report.Add("dup", out.executed.duplicate);
  report.Add("unexpected", out.executed.unexpected);
  report.Add("db_missing", out.fire_rows.missing);
  report.Add("db_dup", out.fire_rows.duplicate);
  report.Add("db_unexpected", out.fire_rows.unexpected);
  report.Add("db_failed", out.db_failed);
  report.Add("db_skipped", out.db_skipped);
  report.Add("db_pending", out.db_pending);
  AddUsage(report, Usage(before, after), spec.window);
  report.AddText("load_avg_start", load_start);
  report.AddText("load_avg_end", load_end);
  return out;
}

}  // namespace jobwheel::bench
