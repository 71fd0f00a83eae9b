// overload: past the peak, the system must degrade, not collapse. For each factor F of
// --overload_factors (2 and 4), F × the searched peak every-second jobs (the peak scenario's
// max_sustained_per_s when it ran in this run, else --overload_peak) fire for --overload_duration
// after --overload_warmup; then all but peak/2 of the jobs are paused in bulk (one statement,
// while the stack fires) and the rest keep firing for --overload_recovery. Over every due time
// (the schedules' expected set), each fire either ran (on time: started within --peak_p99_limit),
// was shed (a SKIPPED or misfire row stands for it), failed with a reason, or is unaccounted.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "bench/http_metrics.h"
#include "bench/load.h"
#include "bench/run_records.h"
#include "bench/scenario.h"
#include "bench/shed_ranges.h"
#include "common/base/status_macros.h"
#include "common/time/clock.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::bench {
namespace {

void SleepUntil(absl::Time t) {
  const absl::Duration d = t - RealClock::Get().Now();
  if (d > absl::ZeroDuration()) absl::SleepFor(d);
}

// The sum of a metric over both schedulers (whichever leads); -1 when unreadable.
double SchedulerMetric(Context& ctx, absl::string_view name) {
  if (ctx.stack.attached()) return -1;
  double sum = 0;
  for (int i = 0; i < 2; ++i) {
    const int port = ctx.stack.scheduler(i).metrics_port;
    if (port <= 0) return -1;
    absl::StatusOr<std::string> body = HttpGet(port, "/metrics");
    if (!body.ok()) return -1;
    sum += MetricSum(*body, name).value_or(0);
  }
  return sum;
}

absl::Status OverloadOnce(Context& ctx, int peak, int factor) {
  const BenchOptions& o = ctx.options;
  RETURN_IF_ERROR(ctx.db.RemoveOwnLoad(o.drain_timeout));
  ctx.stack.NewRecords();
  ResetPeaks(ctx.stack.Processes());
  const double shed_before = SchedulerMetric(ctx, "jobwheel_scheduler_fires_shed_total");
  const double held_before = SchedulerMetric(ctx, "jobwheel_scheduler_claims_held_back_total");
  const int64_t retried_before = ctx.db.retried();

  const int n = peak * factor;
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(RealClock::Get().Now()) + 6);
  const std::string tag = absl::StrCat("overload", factor);
  ASSIGN_OR_RETURN(const std::vector<JobSchedule> jobs,
                   ctx.db.CreateSpreadJobs(tag, n, /*period_s=*/1, t0));
  const absl::Time ws = t0 + o.overload_warmup;
  const absl::Time we = ws + o.overload_duration;
  const absl::Time re = we + o.overload_recovery;
  if (RealClock::Get().Now() > ws) {
    return absl::DeadlineExceededError(absl::StrCat(tag, ": defining the jobs took too long"));
  }
  // After the window the load falls to half the peak: every (2F)-th job keeps firing (their
  // first due times stay spread over the second), the others are paused in one statement.
  const size_t keep_every = static_cast<size_t>(2 * factor);
  absl::flat_hash_set<int64_t> kept;
  std::vector<int64_t> dropped;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i % keep_every == 0) {
      kept.insert(jobs[i].job_id);
    } else {
      dropped.push_back(jobs[i].job_id);
    }
  }

  SleepUntil(ws);
  const Samples before = SampleAll(ctx.stack.Processes());
  SleepUntil(we);
  const Samples after = SampleAll(ctx.stack.Processes());
  const absl::Time pause_start = RealClock::Get().Now();
  RETURN_IF_ERROR(ctx.db.PauseJobs(dropped, we));
  const absl::Duration pause_took = RealClock::Get().Now() - pause_start;
  SleepUntil(re);
  RETURN_IF_ERROR(ctx.db.StopLoad(re));
  SleepUntil(re + o.completion_grace);
  absl::Status drained = ctx.db.WaitDrained(re, o.drain_timeout);
  if (!drained.ok()) {
    return absl::Status(drained.code(), absl::StrCat(tag, ": ", drained.message()));
  }
  absl::SleepFor(absl::Milliseconds(500));  // The executors flush records every 200 ms.

  const Executions runs = CollectExecutions(ctx.stack.NewRecords(), jobs);
  // The rows that stand for due times that did not run, and the failed ones.
  ASSIGN_OR_RETURN(
      pqxx::result rows,
      ctx.db.Query(absl::StrCat(
          "SELECT job_id, (EXTRACT(EPOCH FROM scheduled_at) * 1000000)::BIGINT, status, "
          "COALESCE(reason, '') FROM fires WHERE ",
          ctx.db.OwnJobs(), " AND (status IN (", v1::FIRE_STATUS_SKIPPED, ", ",
          v1::FIRE_STATUS_FAILED, ") OR reason LIKE 'misfire:%')")));
  std::vector<SkippedRow> skipped;
  absl::flat_hash_set<FireKey> failed;
  int64_t range_rows = 0, settled_late = 0;
  for (const pqxx::row& r : rows) {
    const FireKey key{r[0].as<int64_t>(), r[1].as<int64_t>()};
    const std::string reason = r[3].as<std::string>();
    if (r[2].as<int>() == v1::FIRE_STATUS_FAILED) {
      failed.insert(key);
      continue;
    }
    if (CoveredCount(reason) > 1 || reason.rfind("misfire:", 0) == 0) {
      ++range_rows;
    } else {
      ++settled_late;  // A fire claimed, then settled because its hand-off came too late.
    }
    skipped.push_back({key.first, key.second, reason});
  }
  const absl::flat_hash_set<FireKey> covered = CoveredFires(skipped, jobs);

  // The expected set: every job's due times before the window's end, the kept jobs' until the
  // recovery's end (a paused job's later fires are not due).
  const int64_t t0_us = absl::ToUnixMicros(t0), ws_us = absl::ToUnixMicros(ws),
                we_us = absl::ToUnixMicros(we), re_us = absl::ToUnixMicros(re);
  const int64_t limit_us = absl::ToInt64Microseconds(o.peak_p99_limit);
  std::vector<JobSchedule> kept_jobs;
  for (const JobSchedule& j : jobs) {
    if (kept.contains(j.job_id)) kept_jobs.push_back(j);
  }
  std::vector<FireKey> expected = ExpectedFires(jobs, t0_us, we_us);
  const std::vector<FireKey> after_drop = ExpectedFires(kept_jobs, we_us, re_us);
  expected.insert(expected.end(), after_drop.begin(), after_drop.end());

  int64_t offered = 0, on_time = 0, shed_window = 0, shed = 0, lost = 0, failed_n = 0;
  int64_t shed_and_run = 0;
  std::vector<double> lateness;
  const int buckets = static_cast<int>(absl::ToInt64Seconds(o.overload_recovery));
  std::vector<int64_t> bucket_bad(std::max(buckets, 1), 0);
  std::vector<double> settled_lateness;  // The recovery's second half.
  for (const FireKey& k : expected) {
    const bool in_window = k.second >= ws_us && k.second < we_us;
    const bool in_recovery = k.second >= we_us;
    if (in_window) ++offered;
    auto run = runs.first_start_us.find(k);
    bool bad = false;
    if (run != runs.first_start_us.end()) {
      const int64_t late_us = run->second - k.second;
      if (covered.contains(k)) ++shed_and_run;
      if (in_window) {
        lateness.push_back(late_us / 1000.0);
        if (late_us <= limit_us) ++on_time;
      }
      bad = late_us > limit_us;
      if (in_recovery && k.second >= (we_us + re_us) / 2) {
        settled_lateness.push_back(late_us / 1000.0);
      }
    } else if (covered.contains(k)) {
      ++shed;
      if (in_window) ++shed_window;
      bad = true;
    } else if (failed.contains(k)) {
      ++failed_n;
      bad = true;
    } else {
      ++lost;
      bad = true;
    }
    if (in_recovery && bad) {
      const int b = static_cast<int>((k.second - we_us) / 1000000);
      if (b >= 0 && b < static_cast<int>(bucket_bad.size())) ++bucket_bad[b];
    }
  }
  // Recovery: the end of the last second (since the load fell) with a fire late, shed or lost.
  int recovery_s = 0;
  for (int b = 0; b < static_cast<int>(bucket_bad.size()); ++b) {
    if (bucket_bad[b] > 0) recovery_s = b + 1;
  }
  int64_t starts_in_window = 0;
  for (const auto& [key, start_us] : runs.first_start_us) {
    if (start_us >= ws_us && start_us < we_us) ++starts_in_window;
  }
  const int64_t dup = static_cast<int64_t>(runs.keys.size() - runs.first_start_us.size());
  const double window_s = absl::ToDoubleSeconds(o.overload_duration);
  const Percentiles p = ComputePercentiles(lateness);
  const Percentiles settled = ComputePercentiles(settled_lateness);
  const double shed_after = SchedulerMetric(ctx, "jobwheel_scheduler_fires_shed_total");
  const double held_after = SchedulerMetric(ctx, "jobwheel_scheduler_claims_held_back_total");

  Report r;
  r.Add("factor", static_cast<int64_t>(factor));
  r.Add("offered_per_s", offered / window_s, 0);
  r.Add("achieved_per_s", starts_in_window / window_s, 0);
  r.Add("on_time_per_s", on_time / window_s, 0);
  r.Add("shed", shed);
  r.Add("lost_unaccounted", lost);
  r.Add("dup", dup + shed_and_run);
  r.Add("recovery_s", static_cast<int64_t>(recovery_s));
  r.Add("peak_per_s", static_cast<int64_t>(peak));
  r.Add("on_time_of_peak", on_time / window_s / peak, 2);
  r.Add("shed_in_window", shed_window);
  r.Add("failed", failed_n);
  r.Add("checked", static_cast<int64_t>(expected.size()));
  r.Add("p50_ms", p.p50, 1);
  r.Add("p99_ms", p.p99, 1);
  r.Add("recovered_p99_ms", settled.p99, 1);
  // What shedding cost: one row per job and range, against rows settled one by one.
  r.Add("shed_range_rows", range_rows);
  r.Add("settled_late_rows", settled_late);
  r.Add("rows_per_shed", shed > 0 ? static_cast<double>(range_rows + settled_late) / shed : 0.0, 3);
  if (shed_before >= 0 && shed_after >= 0) {
    r.Add("sched_fires_shed", static_cast<int64_t>(shed_after - shed_before));
    r.Add("sched_claims_held_back", static_cast<int64_t>(held_after - held_before));
  }
  r.Add("paused_jobs", static_cast<int64_t>(dropped.size()));
  r.Add("pause_ms", absl::ToDoubleMilliseconds(pause_took), 0);
  r.Add("db_retried", ctx.db.retried() - retried_before);
  r.Add("window_s", window_s, 0);
  r.Add("warmup_s", absl::ToDoubleSeconds(o.overload_warmup), 0);
  AddUsage(r, Usage(before, after), o.overload_duration);
  ctx.results.Emit("overload", r);
  return absl::OkStatus();
}

}  // namespace

absl::Status RunOverload(Context& ctx) {
  const int peak = ctx.peak_per_s > 0 ? ctx.peak_per_s : ctx.options.overload_peak;
  for (int factor : ctx.options.overload_factors) {
    RETURN_IF_ERROR(OverloadOnce(ctx, peak, factor));
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::bench
