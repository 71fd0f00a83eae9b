#!/usr/bin/env python3
"""Counts invariants 1-4 (docs/DESIGN.md) in the database after a chaos run.

Reads PostgreSQL through `psql` and the executors' run logs and spools from disk, prints detail
lines and ends with

  chaos: expected=N recorded=N lost=0 doubled=0 nonterminal=0 results_lost=0 executed_twice=0 slow_lost=0 partitions=K

(and " faults_skipped=N" when faults of the run could not be injected; with --line, one more
line: LINE lost=.. executed_twice=.. results_lost=.. nonterminal=.., the pg_failover scenario's). Exit status 1 when
lost, doubled, nonterminal, results_lost, executed_twice, slow_lost or nondispatched (PENDING
fires, or failed/skipped fires without a reason, or dispatched fires without a run) is not 0,
on anomalies, and when faults were skipped and CI=true (a check that did not run is no pass).

Definitions (docs/chaos.md explains them):
  expected  for each job of the app, every whole second s with create_time < s <= cut (the jobs
            are `* * * * * ?`, so the schedule is every second from creation to the cut).
  recorded  expected seconds covered by a fire row of the job: a CRON fire at s, or a misfire
            row (trigger MISFIRE for FIRE_ONCE_NOW, SKIPPED for DO_NOTHING) whose reason
            "misfire: N fire(s) from A to B ..." covers A..B.
  lost      expected - recorded.
  doubled   expected seconds covered more than once, plus (fire, shard) pairs with more than one
            run.
  nonterminal  runs still PENDING (1) or RUNNING (2).
  results_lost runs an executor finished (its run log has the "ended: STATUS" line the SDK
            writes just before spooling the result) that are not terminal in the database, or
            whose database status is not the executor's (unless the executor's result is kept
            in runs.late_result), plus results left in a spool (journal records put and not
            removed, see spool.py).
  executed_twice  executions counted on the executors: the "run N started" line the SDK writes
            when a run's handler starts (sdk/internal/run_execution.cc), over every executor's
            run logs; every start of a run after its first, plus every run after the first
            started for one fire (no job here broadcasts: one run per fire).
  slow_lost runs RUNNING on an executor when it was killed (--kills) that were still not
            terminal 2 s after the kill (the executor never ended them, so nothing but the
            scheduler can end them).
"""
import argparse
import collections
import datetime
import glob
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spool  # noqa: E402  (tests/chaos/spool.py)

RUN_STATUS = {1: "PENDING", 2: "RUNNING", 3: "SUCCEEDED", 4: "FAILED", 5: "TIMED_OUT",
              6: "KILLED", 7: "LOST", 8: "DISCARDED"}
FIRE_STATUS = {1: "PENDING", 2: "DISPATCHED", 3: "SKIPPED", 4: "FAILED"}
TRIGGER = {1: "CRON", 2: "FIX_RATE", 3: "MANUAL", 4: "MISFIRE", 5: "RETRY", 6: "PARENT"}
MISFIRE_RE = re.compile(r"misfire: (\d+) fire\(s\) from (\S+) to (\S+) ")
# A fire found late after a takeover or outage: the row stands for its own second only.
LATE_RE = re.compile(r"^late: \d+ pending fire\(s\) from ")
ACCEPTED_RE = re.compile(r" run (\d+) accepted: job (\d+), .*?, fire (\d+),")
ENDED_RE = re.compile(r" run (\d+) ended: ([A-Z_]+) ")
# The SDK's line when a run's handler or script starts: "run N started" [" (timeout D)"].
STARTED_RE = re.compile(r" run (\d+) started(?: \(timeout [^)]*\))?$")
LINE_TIME_RE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) ")
SLOW_LOST_AFTER = 2.0  # seconds after an executor's kill by which its runs must be terminal


def query(dsn, sql):
    """Rows of `sql` as lists of strings (tab separated, no NULL ambiguity needed here)."""
    out = subprocess.run(
        ["psql", dsn, "-XAtq", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql],
        check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def parse_time(text):
    """absl::FormatTime's RFC 3339 (e.g. 2026-01-02T03:04:05+00:00) to unix seconds."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--psql", required=True, help="libpq connection string")
    ap.add_argument("--app", required=True)
    ap.add_argument("--cut", type=float, required=True, help="unix time the load was cut")
    ap.add_argument("--exec_dirs", default="", help="comma list of dirs with logs/ and spool/")
    ap.add_argument("--kills", default="", help="file of 'NAME ADDRESS UNIX_TIME' executor kills")
    ap.add_argument("--partitions", type=int, default=0, help="partitions injected (reported)")
    ap.add_argument("--faults_skipped", default="", help="comma list of faults not injected")
    ap.add_argument("--fired_only", action="store_true",
                    help="a second counts as recorded only by a fire of its own that was "
                         "dispatched: one a misfire or late row stands for is lost (the "
                         "pg_failover scenario, whose misfire threshold outlasts the outage)")
    ap.add_argument("--line", default="",
                    help="also end with LINE lost=.. executed_twice=.. results_lost=.. "
                         "nonterminal=.. (e.g. 'pg_failover: mode=sync kills=1 ...')")
    args = ap.parse_args()
    dsn, app, cut = args.psql, args.app, args.cut
    problems = []

    def detail(msg):
        print("  " + msg)

    # ------------------------------------------------------------------ invariant 1
    jobs = {int(r[0]): (float(r[1]), int(r[2]))
            for r in query(dsn, "SELECT id, EXTRACT(EPOCH FROM create_time), misfire_strategy "
                                "FROM jobs WHERE app = '%s'" % app)}
    if not jobs:
        print("chaos: no jobs of app %s in the database" % app)
        return 1
    ids = ",".join(str(j) for j in jobs)
    fires = query(dsn, "SELECT id, job_id, (EXTRACT(EPOCH FROM scheduled_at) * 1000000)::BIGINT, "
                       "trigger_type, status, reason FROM fires "
                       "WHERE job_id IN (%s) AND trigger_type IN (1, 2, 4)" % ids)
    cover = collections.defaultdict(collections.Counter)  # job -> second -> rows covering it
    skipped_rows = skipped_secs = once_rows = once_secs = late_skipped = late_once = 0
    shed_secs = 0  # --fired_only: seconds only a misfire, late or undispatched row stands for
    odd = []
    erased = []  # (job, second) of misfire rows whose reason is gone
    for fid, job, micros, ttype, status, reason in fires:
        fid, job, micros, ttype, status = int(fid), int(job), int(micros), int(ttype), int(status)
        m = MISFIRE_RE.search(reason)
        if m:
            n, a, b = int(m.group(1)), parse_time(m.group(2)), parse_time(m.group(3))
            secs = list(range(int(round(a)), int(round(b)) + 1))
            if len(secs) != n or micros != int(round(a)) * 1000000:
                odd.append("fire %d: misfire reason says %d fire(s) from %s to %s (%d seconds), "
                           "scheduled_at %d" % (fid, n, m.group(2), m.group(3), len(secs),
                                                micros // 1000000))
            if status == 3:
                skipped_rows += 1
                skipped_secs += len(secs)
            else:
                once_rows += 1
                once_secs += len(secs)
        elif LATE_RE.search(reason):
            secs = [micros // 1000000]
            if status == 3:
                late_skipped += 1
            else:
                late_once += 1
        else:
            if micros % 1000000:
                odd.append("fire %d: scheduled_at is not a whole second (%d us)" % (fid, micros))
            secs = [micros // 1000000]
            if ttype == 4 or status == 3:
                # The row stands for missed seconds but no longer says which (its reason was
                # overwritten); the seconds after it are then counted as lost.
                erased.append((job, secs[0]))
                if len(erased) <= 3:
                    odd.append("fire %d: trigger %s status %s without a misfire reason (%r)"
                               % (fid, TRIGGER.get(ttype), FIRE_STATUS.get(status), reason))
        if args.fired_only and (m or ttype == 4 or status != 2):
            shed_secs += len(secs)
            continue
        for s in secs:
            cover[job][s] += 1

    expected = recorded = lost = doubled_fires = 0
    lost_examples = []
    lost_by_second = collections.Counter()
    for job, (created, _) in jobs.items():
        first = int(created) + 1  # the first whole second after creation
        last = int(cut)
        c = cover[job]
        for s in range(first, last + 1):
            expected += 1
            k = c.get(s, 0)
            if k:
                recorded += 1
                doubled_fires += k - 1
            else:
                lost += 1
                lost_by_second[s] += 1
                if len(lost_examples) < 5:
                    lost_examples.append("job %d second %s" % (job, iso(s)))
    # Seconds covered outside the window (after the cut, before pausing) are not counted.
    # Lost seconds right after a misfire row without its reason: most likely the seconds that
    # row stood for (the checker cannot prove it, so they stay lost; this says where they are).
    after_erased = 0
    for job, a in erased:
        s = a + 1
        while s <= int(cut) and not cover[job].get(s):
            after_erased += 1
            s += 1

    # ------------------------------------------------------------------ fires and runs
    fire_stats = query(dsn, "SELECT trigger_type, status, count(*), count(*) FILTER (WHERE reason = '') "
                            "FROM fires GROUP BY 1, 2 ORDER BY 1, 2")
    pending_fires = sum(int(r[2]) for r in fire_stats if int(r[1]) == 1)
    noreason = sum(int(r[3]) for r in fire_stats if int(r[1]) in (3, 4))
    fires_without_runs = int(query(dsn,
        "SELECT count(*) FROM fires f WHERE f.status IN (2, 4) "
        "AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.fire_id = f.id)")[0][0])
    run_stats = query(dsn, "SELECT status, count(*) FROM runs GROUP BY 1 ORDER BY 1")
    nonterminal = sum(int(r[1]) for r in run_stats if int(r[0]) in (1, 2))
    doubled_runs = int(query(dsn,
        "SELECT COALESCE(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM runs "
        "GROUP BY fire_id, shard_index HAVING count(*) > 1) d")[0][0])

    # ------------------------------------------------------------------ invariant 4
    has_late = bool(query(dsn, "SELECT 1 FROM information_schema.columns "
                               "WHERE table_name = 'runs' AND column_name = 'late_result'"))
    runs = {int(r[0]): (int(r[1]), int(r[2]), r[3], r[4], r[5])
            for r in query(dsn, "SELECT id, status, fire_id, result_message, executor_address, "
                                "%s FROM runs" % ("COALESCE(late_result, '')" if has_late else "''"))}
    ended = {}  # run id -> executor status
    accepted = collections.Counter()  # run id -> accepted lines
    fire_runs = collections.defaultdict(set)  # fire id -> run ids started on executors
    started = collections.defaultdict(list)  # run id -> executor dirs where it started
    spooled = []  # (executor dir, run id or description)
    exec_dirs = [x for x in args.exec_dirs.split(",") if x]
    for d in exec_dirs:
        # Run logs: <log_dir>/<day>/seg-<n>.log, chunks of whole lines back to back (a chunk
        # discarded by the index's tombstone belongs to a refused run, which logged nothing).
        for path in sorted(glob.glob(os.path.join(d, "logs", "*", "*.log"))):
            try:
                with open(path, errors="replace") as f:
                    for line in f:
                        line = line.rstrip("\n")
                        m = ACCEPTED_RE.search(line)
                        if m:
                            accepted[int(m.group(1))] += 1
                            continue
                        m = ENDED_RE.search(line)
                        if m:
                            ended[int(m.group(1))] = m.group(2)
                            continue
                        m = STARTED_RE.search(line)
                        if m:
                            started[int(m.group(1))].append(os.path.basename(d))
            except OSError as e:
                odd.append("cannot read %s: %s" % (path, e))
        live, other = spool.live_results(os.path.join(d, "spool"))
        spooled.extend((os.path.basename(d), rid) for rid in sorted(live))
        spooled.extend((os.path.basename(d), o) for o in other)
    for rid in started:
        db = runs.get(rid)
        if db is not None:
            fire_runs[db[1]].add(rid)
    lost_results = set()
    for run_id, st in ended.items():
        db = runs.get(run_id)
        if db is None or db[0] in (1, 2):
            lost_results.add(run_id)
    for _, what in spooled:
        lost_results.add(what)
    overridden = collections.Counter()  # the database decided otherwise; the result is gone
    late_kept = collections.Counter()  # ... and kept the executor's result in late_result
    for run_id, st in ended.items():
        db = runs.get(run_id)
        if db is None or db[0] in (1, 2) or RUN_STATUS[db[0]] == st:
            continue
        if db[4] and re.search(r"\b%s\b" % st, db[4]):
            late_kept[(st, RUN_STATUS[db[0]])] += 1
        else:
            overridden[(st, RUN_STATUS[db[0]], db[2][:60])] += 1
            lost_results.add(run_id)
    accepted_not_ended = [r for r in accepted if r not in ended]
    accepted_twice = sum(n - 1 for n in accepted.values() if n > 1)
    executed_twice_runs = {rid: where for rid, where in started.items() if len(where) > 1}
    # No job here broadcasts, so each fire has one run (shard 0): a fire with more than one run
    # started on executors ran twice.
    executed_twice_fires = {f: r for f, r in fire_runs.items() if len(r) > 1}
    executed_twice = (sum(len(w) - 1 for w in executed_twice_runs.values()) +
                      sum(len(r) - 1 for r in executed_twice_fires.values()))
    succeeded_without_log = sum(1 for rid, v in runs.items() if v[0] == 3 and rid not in ended)

    # ------------------------------------------------------------------ executor kills
    kills = []
    if args.kills and os.path.exists(args.kills):
        with open(args.kills) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3:
                    kills.append((parts[0], parts[1], float(parts[2])))
    slow_lost = 0
    slow_lines = []
    for name, address, t in kills:
        rows = query(dsn,
            "SELECT id, status, COALESCE(EXTRACT(EPOCH FROM end_time)::TEXT, '') FROM runs "
            "WHERE executor_address = '%s' AND start_time <= to_timestamp(%f) "
            "AND (end_time IS NULL OR end_time > to_timestamp(%f))" % (address, t, t))
        in_flight = [(int(r[0]), int(r[1]), float(r[2]) if r[2] else None) for r in rows
                     if int(r[0]) not in ended]
        slow = [(rid, st, e) for rid, st, e in in_flight if e is None or e - t > SLOW_LOST_AFTER]
        slow_lost += len(slow)
        delays = [e - t for _, _, e in in_flight if e is not None]
        slow_lines.append("kill -9 of %s (%s) at %s: %d run(s) in flight, %d not terminal "
                          "within %.0f s%s" % (
                              name, address, iso(t), len(in_flight), len(slow), SLOW_LOST_AFTER,
                              ", ended %.1f-%.1f s after the kill" % (min(delays), max(delays))
                              if delays else ""))
        for rid, st, e in slow[:3]:
            slow_lines.append("  run %d: %s %s" % (rid, RUN_STATUS.get(st, st),
                              "%.1f s after the kill" % (e - t) if e is not None else "never ended"))

    doubled = doubled_fires + doubled_runs
    nondispatched = pending_fires + noreason + fires_without_runs
    results_lost = len(lost_results)

    # ------------------------------------------------------------------ report
    print("invariant 1 (every due fire recorded exactly once):")
    detail("jobs %d, window: creation .. cut %s" % (len(jobs), iso(cut)))
    detail("expected %d, recorded %d, lost %d, doubled seconds %d" %
           (expected, recorded, lost, doubled_fires))
    detail("misfires: %d SKIPPED row(s) covering %d second(s) (DO_NOTHING), "
           "%d MISFIRE fire(s) covering %d second(s) (FIRE_ONCE_NOW)" %
           (skipped_rows, skipped_secs, once_rows, once_secs))
    detail("late fires (pending past the misfire threshold after a takeover or outage): "
           "%d skipped, %d fired once" % (late_skipped, late_once))
    if args.fired_only:
        detail("--fired_only: %d second(s) stood for by a misfire, late or undispatched row "
               "counted lost" % shed_secs)
    if lost:
        detail("lost examples: " + "; ".join(lost_examples))
        worst = sorted(lost_by_second.items())
        if erased:
            detail("%d lost second(s) directly follow one of %d misfire fire(s) whose "
                   "\"misfire: N fire(s) from A to B\" reason was erased" % (after_erased, len(erased)))
        detail("lost per second (first 10): " +
               ", ".join("%s x%d" % (iso(s), n) for s, n in worst[:10]))
    print("invariant 2 (every fire dispatched, or failed with a reason):")
    for tt, st, n, nr in fire_stats:
        detail("fires %-8s %-10s %7s%s" % (TRIGGER.get(int(tt), tt), FIRE_STATUS.get(int(st), st),
                                          n, "  (%s without reason)" % nr
                                          if int(st) in (3, 4) and int(nr) else ""))
    reasons = query(dsn, "SELECT left(regexp_replace(reason, '(job|fire) [0-9]+', '\\1 N', 'g'), 90), "
                         "count(*) FROM fires WHERE status = 4 GROUP BY 1 ORDER BY 2 DESC LIMIT 5")
    for reason, n in reasons:
        detail("failed fire reason x%s: %s" % (n, reason))
    detail("pending fires %d, failed/skipped without reason %d, dispatched/failed without a run %d"
           % (pending_fires, noreason, fires_without_runs))
    print("invariant 3 (every run terminal):")
    detail("runs: " + ", ".join("%s %s" % (RUN_STATUS.get(int(s), s), n) for s, n in run_stats))
    msgs = query(dsn, "SELECT status, left(regexp_replace(COALESCE(NULLIF(result_message, ''), "
                      "trigger_message), '(job|run|fire) [0-9]+', '\\1 N', 'g'), 110), "
                      "count(*) FROM runs WHERE status <> 3 GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 8")
    for st, msg, n in msgs:
        detail("%s x%s: %s" % (RUN_STATUS.get(int(st), st), n, msg))
    if nonterminal:
        for r in query(dsn, "SELECT id, status, executor_address, trigger_time, start_time, "
                            "left(trigger_message, 80) FROM runs WHERE status IN (1, 2) "
                            "ORDER BY id LIMIT 5"):
            detail("nonterminal run %s: %s on %s, triggered %s, started %s: %s" %
                   (r[0], RUN_STATUS[int(r[1])], r[2] or "-", r[3], r[4] or "-", r[5]))
    detail("doubled runs per (fire, shard) %d" % doubled_runs)
    for line in slow_lines:
        detail(line)
    print("no run executed twice (counted on the executors):")
    detail("runs started on executors %d (run logs' \"run N started\"), runs accepted more "
           "than once %d (requests repeated; not an execution)" % (len(started), accepted_twice))
    for rid, where in sorted(executed_twice_runs.items())[:5]:
        detail("run %d started %d times: %s" % (rid, len(where), ", ".join(where)))
    for fid, rids in sorted(executed_twice_fires.items())[:5]:
        detail("fire %d: runs %s all started" % (fid, ", ".join(str(r) for r in sorted(rids))))
    print("invariant 4 (no executor result lost):")
    detail("executor run logs: %d accepted, %d ended (result spooled), %d accepted but never "
           "ended (in flight when killed)" % (len(accepted), len(ended), len(accepted_not_ended)))
    detail("results left in spools (journal records put and not removed): %d%s" % (
        len(spooled), " (%s)" % ", ".join("%s: %s" % s_ for s_ in spooled[:5]) if spooled else ""))
    detail("ended on an executor but not terminal in the database: %d; terminal with another "
           "status (result not kept): %d" % (
               sum(1 for r in ended if r not in runs or runs[r][0] in (1, 2)),
               sum(overridden.values())))
    for (est, dbst, msg), n in overridden.most_common(5):
        detail("executor said %s but the database decided %s x%d: %s" % (est, dbst, n, msg))
    for (est, dbst), n in late_kept.most_common(5):
        detail("executor said %s, the database decided %s and kept the result in late_result "
               "x%d (documented)" % (est, dbst, n))
    if not has_late:
        detail("runs.late_result does not exist (migration 7 not applied)")
    detail("SUCCEEDED in the database without an executor log line: %d" % succeeded_without_log)
    if lost_results:
        ex = sorted(x for x in lost_results if isinstance(x, int))[:5]
        for rid in ex:
            db = runs.get(rid)
            detail("lost result of run %d: executor %s, database %s" %
                   (rid, ended.get(rid, "spooled"), RUN_STATUS.get(db[0]) if db else "no row"))
    if erased:
        odd.append("%d misfire fire(s) (trigger MISFIRE or status SKIPPED) have lost their "
                   "misfire reason: the missed fires they stand for are not visible" % len(erased))
    if odd:
        print("anomalies:")
    for o in odd[:12]:
        detail("anomaly: " + o)

    faults_skipped = [x for x in args.faults_skipped.split(",") if x]
    summary = ("chaos: expected=%d recorded=%d lost=%d doubled=%d nonterminal=%d results_lost=%d "
               "executed_twice=%d slow_lost=%d partitions=%d"
               % (expected, recorded, lost, doubled, nonterminal, results_lost, executed_twice,
                  slow_lost, args.partitions))
    if faults_skipped:
        summary += " faults_skipped=%d" % len(faults_skipped)
    extra = ("skipped=%d fired_once_now=%d late_skipped=%d late_fired_once=%d nondispatched=%d "
             "results_overridden=%d results_in_late_result=%d" % (
                 skipped_secs, once_secs, late_skipped, late_once, nondispatched,
                 sum(overridden.values()), sum(late_kept.values())))
    ci_skip = bool(faults_skipped) and os.environ.get("CI") == "true"
    failed = (lost or doubled or nonterminal or results_lost or executed_twice or slow_lost or
              nondispatched or odd or ci_skip)
    print("details: " + extra + (" anomalies=%d" % len(odd) if odd else ""))
    if faults_skipped:
        print("faults skipped (not injected, not passed): %s%s" % (
            ", ".join(faults_skipped), "; CI=true: a skip fails the run" if ci_skip else ""))
    print("result: " + ("FAIL" if failed else "PASS"))
    print(summary)
    if args.line:
        print("%s lost=%d executed_twice=%d results_lost=%d nonterminal=%d"
              % (args.line, lost, executed_twice, results_lost, nonterminal))
    return 1 if failed else 0


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%H:%M:%S")


if __name__ == "__main__":
    sys.exit(main())
