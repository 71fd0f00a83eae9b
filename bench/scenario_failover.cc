// failover: --failover_jobs every-second jobs run; the leading scheduler gets kill -9 and the
// standby takes over. Measured: the longest time without any run starting on an executor
// around the kill (gap), kill → new epoch in `leadership` (takeover), and, over the fires due
// from 5 s before to 8 s after the kill, the expected set of (job, scheduled time) against the
// executors' records and the fire rows. Skipped when attached (the stack is not ours to kill).
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/fire_sets.h"
#include "bench/run_records.h"
#include "bench/scenario.h"
#include "bench/shed_ranges.h"
#include "common/base/status_macros.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"

namespace jobwheel::bench {

absl::Status RunFailover(Context& ctx) {
  if (ctx.stack.attached()) return absl::OkStatus();
  const BenchOptions& opt = ctx.options;
  RETURN_IF_ERROR(ctx.db.RemoveOwnLoad(opt.drain_timeout));
  ctx.stack.NewRecords();
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(RealClock::Get().Now()) + 4);
  ASSIGN_OR_RETURN(const std::vector<JobSchedule> jobs,
                   ctx.db.CreateSpreadJobs("failover", opt.failover_jobs, 1, t0));

  ASSIGN_OR_RETURN(pqxx::result lr, ctx.db.Query("SELECT holder_id FROM leadership"));
  const std::string leader = lr.empty() ? "" : lr[0][0].as<std::string>();
  const int victim = leader == Stack::ReplicaName(1) ? 1 : 0;
  absl::SleepFor(t0 + absl::Seconds(6) - RealClock::Get().Now());
  const absl::Time killed = RealClock::Get().Now();
  ctx.stack.scheduler(victim).proc->Signal(SIGKILL);
  if (!ctx.stack.scheduler(victim).proc->Wait(absl::Seconds(5)).ok()) {
    return absl::DeadlineExceededError("failover: the killed scheduler did not exit within 5s");
  }
  // The standby takes the lock.
  absl::Time taken = absl::InfiniteFuture();
  const bool took = testing::Eventually(
      [&] {
        absl::StatusOr<pqxx::result> r = ctx.db.Query(
            "SELECT holder_id, (EXTRACT(EPOCH FROM since) * 1000000)::BIGINT FROM leadership");
        if (!r.ok() || r->empty() || (*r)[0][0].as<std::string>() == leader) return false;
        taken = FromMicros((*r)[0][1].as<int64_t>());
        return true;
      },
      absl::Seconds(15));
  if (!took) return absl::DeadlineExceededError("failover: no new leader within 15s of the kill");

  // Fires due from 5 s before the kill to 8 s after it are checked.
  const absl::Time from = killed - absl::Seconds(5);
  const absl::Time to = killed + absl::Seconds(8);
  absl::SleepFor(to + absl::Seconds(1) - RealClock::Get().Now());
  RETURN_IF_ERROR(ctx.db.StopLoad(to + absl::Seconds(1)));
  RETURN_IF_ERROR(ctx.db.WaitDrained(to, opt.drain_timeout));
  absl::SleepFor(absl::Milliseconds(500));  // The executors flush records every 200 ms.

  const int64_t from_us = absl::ToUnixMicros(from), to_us = absl::ToUnixMicros(to);
  const int64_t killed_us = absl::ToUnixMicros(killed);
  const std::vector<FireKey> expected = ExpectedFires(jobs, from_us, to_us);
  const Executions runs = CollectExecutions(ctx.stack.NewRecords(), jobs);
  std::vector<int64_t> starts;
  std::vector<double> late_after_kill;
  for (const auto& [key, start_us] : runs.first_start_us) {
    if (key.second < from_us || key.second >= to_us) continue;
    starts.push_back(start_us);
    if (key.second >= killed_us) late_after_kill.push_back((start_us - key.second) / 1000.0);
  }
  // The gap: the longest time without any run starting on an executor, around the kill.
  std::sort(starts.begin(), starts.end());
  int64_t gap_us = 0;
  for (size_t i = 1; i < starts.size(); ++i) {
    if (starts[i] < killed_us - 1000000) continue;
    gap_us = std::max(gap_us, starts[i] - starts[i - 1]);
  }
  const Percentiles late = ComputePercentiles(late_after_kill);
  const SetComparison ran = CompareFireSets(expected, runs.keys, from_us, to_us);
  ASSIGN_OR_RETURN(BenchDb::FireRows rows, ctx.db.ReadFires(from, to));
  for (const FireKey& k : CoveredFires(rows.ranges, jobs)) rows.keys.push_back(k);
  const SetComparison rec = CompareFireSets(expected, rows.keys, from_us, to_us);
  ASSIGN_OR_RETURN(
      const int64_t runs_dup,
      ctx.db.Count(absl::StrCat("SELECT count(*) - count(DISTINCT fire_id) FROM runs WHERE ",
                                ctx.db.OwnJobs(), " AND scheduled_time >= ", BenchDb::Ts(from),
                                " AND scheduled_time < ", BenchDb::Ts(to))));

  Report r;
  r.Add("jobs", static_cast<int64_t>(opt.failover_jobs));
  r.Add("gap_ms", gap_us / 1000.0, 0);
  r.Add("takeover_ms", absl::ToDoubleMilliseconds(taken - killed), 0);
  r.Add("late_after_kill_p99_ms", late.p99, 0);
  r.Add("late_after_kill_max_ms", late.max, 0);
  r.Add("checked", ran.expected);
  r.Add("lost", ran.missing);
  r.Add("dup", ran.duplicate);
  r.Add("unexpected", ran.unexpected);
  r.Add("db_missing", rec.missing);
  r.Add("db_dup", rec.duplicate);
  r.Add("db_unexpected", rec.unexpected);
  r.Add("db_not_dispatched", rows.failed + rows.skipped + rows.pending);
  r.Add("db_runs_dup", runs_dup);
  r.AddText("victim", Stack::ReplicaName(victim));
  ctx.results.Emit("failover", r);

  // The killed replica comes back as the standby.
  return ctx.stack.StartScheduler(victim);
}

}  // namespace jobwheel::bench
