#!/usr/bin/env python3
"""Counts invariants 1-4 (docs/DESIGN.md) in the database after a chaos run.

Reads PostgreSQL through `psql` and the executors' run logs and spools from disk, prints detail
lines and ends with

  chaos: expected=N recorded=N lost=0 doubled=0 nonterminal=0 results_lost=0

Exit status 1 when lost, doubled, nonterminal, results_lost or nondispatched (PENDING fires, or
failed/skipped fires without a reason, or dispatched fires without a run) is not 0.

Definitions (docs/chaos.md explains them):
  expected  for each job of the app, every whole second s with create_time < s <= cut (the jobs
            are `* * * * * ?`, so the schedule is every second from creation to the cut).
  recorded  expected seconds covered by a fire row of the job: a CRON fire at s, or a misfire
            row (trigger MISFIRE for FIRE_ONCE_NOW, SKIPPED for DO_NOTHING) whose reason
            "misfire: N fire(s) from A to B ..." covers A..B.
  lost      expected - recorded.
  doubled   expected seconds covered more than once, plus (fire, shard) pairs with more than one
            run, plus fires whose runs an executor accepted more than once.
  nonterminal  runs still PENDING (1) or RUNNING (2).
  results_lost runs an executor finished (its run log has the "ended:" line the SDK writes just
            before spooling the result) that are not terminal in the database, plus results
            left in a spool (never acknowledged).
"""
import argparse
import collections
import datetime
import glob
import os
import re
import subprocess
import sys

RUN_STATUS = {1: "PENDING", 2: "RUNNING", 3: "SUCCEEDED", 4: "FAILED", 5: "TIMED_OUT",
              6: "KILLED", 7: "LOST", 8: "DISCARDED"}
FIRE_STATUS = {1: "PENDING", 2: "DISPATCHED", 3: "SKIPPED", 4: "FAILED"}
TRIGGER = {1: "CRON", 2: "FIX_RATE", 3: "MANUAL", 4: "MISFIRE", 5: "RETRY", 6: "PARENT"}
MISFIRE_RE = re.compile(r"misfire: (\d+) fire\(s\) from (\S+) to (\S+) ")
# A fire found late after a takeover or outage: the row stands for its own second only.
LATE_RE = re.compile(r"^late: \d+ pending fire\(s\) from ")
ACCEPTED_RE = re.compile(r" run (\d+) accepted: job (\d+), .*?, fire (\d+),")
ENDED_RE = re.compile(r" run (\d+) ended: ([A-Z_]+) ")


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
    runs = {int(r[0]): (int(r[1]), int(r[2]), r[3], r[4])
            for r in query(dsn, "SELECT id, status, fire_id, result_message, executor_address FROM runs")}
    ended = {}  # run id -> executor status
    accepted = collections.Counter()  # run id -> accepted lines
    fire_runs = collections.defaultdict(set)  # fire id -> run ids accepted by executors
    spooled = []
    for d in [x for x in args.exec_dirs.split(",") if x]:
        for path in glob.glob(os.path.join(d, "logs", "*", "*.log")):
            try:
                with open(path, errors="replace") as f:
                    for line in f:
                        m = ACCEPTED_RE.search(line)
                        if m:
                            accepted[int(m.group(1))] += 1
                            fire_runs[int(m.group(3))].add(int(m.group(1)))
                            continue
                        m = ENDED_RE.search(line)
                        if m:
                            ended[int(m.group(1))] = m.group(2)
            except OSError as e:
                odd.append("cannot read %s: %s" % (path, e))
        # *.tmp files are half-written results of a killed process; the SDK deletes them at
        # start (they were never acknowledged to anyone, the run is in flight for the record).
        for pattern in ("*.result", "*.bad"):
            spooled.extend(glob.glob(os.path.join(d, "spool", pattern)))
    lost_results = set()
    for run_id, st in ended.items():
        db = runs.get(run_id)
        if db is None or db[0] in (1, 2):
            lost_results.add(run_id)
    for path in spooled:
        m = re.match(r"(\d+)\.", os.path.basename(path))
        lost_results.add(int(m.group(1)) if m else path)
    overridden = collections.Counter()
    for run_id, st in ended.items():
        db = runs.get(run_id)
        if db is not None and db[0] not in (1, 2) and RUN_STATUS[db[0]] != st:
            overridden[(st, RUN_STATUS[db[0]], db[2][:60])] += 1
    accepted_not_ended = [r for r in accepted if r not in ended]
    doubled_exec = sum(n - 1 for n in accepted.values() if n > 1)
    # No job here broadcasts, so each fire has one run (shard 0): a fire whose run ids were
    # accepted on executors more than once ran twice.
    doubled_exec += sum(len(r) - 1 for r in fire_runs.values() if len(r) > 1)
    succeeded_without_log = sum(1 for rid, v in runs.items() if v[0] == 3 and rid not in ended)

    doubled = doubled_fires + doubled_runs + doubled_exec
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
    detail("doubled runs per (fire, shard) %d, runs accepted twice by executors %d" %
           (doubled_runs, doubled_exec))
    print("invariant 4 (no executor result lost):")
    detail("executor run logs: %d accepted, %d ended (result spooled), %d accepted but never "
           "ended (in flight when killed)" % (len(accepted), len(ended), len(accepted_not_ended)))
    detail("results left in spools: %d; ended on an executor but not terminal in the database: %d"
           % (len(spooled), len(lost_results) - len(spooled)))
    for (est, dbst, msg), n in overridden.most_common(5):
        detail("executor said %s but the database had already decided %s x%d: %s" %
               (est, dbst, n, msg))
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

    summary = ("chaos: expected=%d recorded=%d lost=%d doubled=%d nonterminal=%d results_lost=%d"
               % (expected, recorded, lost, doubled, nonterminal, results_lost))
    extra = "skipped=%d fired_once_now=%d late_skipped=%d late_fired_once=%d nondispatched=%d" % (
        skipped_secs, once_secs, late_skipped, late_once, nondispatched)
    failed = lost or doubled or nonterminal or results_lost or nondispatched or odd
    print("details: " + extra + (" anomalies=%d" % len(odd) if odd else ""))
    print("result: " + ("FAIL" if failed else "PASS"))
    print(summary)
    return 1 if failed else 0


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%H:%M:%S")


if __name__ == "__main__":
    sys.exit(main())
