"""The XXL gateway's bench: `rate` FIX_RATE jobs due every second, spread evenly over the
second (rate fires/s), routed ROUND over two XXL-protocol test executors behind the XXL gateway;
each executor appends "logId arrival_us" for every /run that reaches it (logId = run id).

    xxl: executors=2 rate_per_s=R achieved_per_s=A p99_ms=P lost=L dup=D ...

achieved: fires due in the window whose run reached an executor, per second; p99_ms: arrival
at the XXL executor - scheduled time of the fire; lost: fires due in the window (the fires
table) whose run never arrived by the end of the grace; dup: run ids or fires that arrived
more than once (on either executor); run_row_p50_ms: when a dispatcher wrote the run's row
(its trigger_time) - scheduled time, the part of the lateness before the gateway.
bench_xxl.sh starts the stack and passes it in the
environment.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import grpc

from jobwheel.v1 import job_admin_pb2, job_admin_pb2_grpc
from jobwheel.v1 import registry_pb2, registry_pb2_grpc, types_pb2

E = os.environ
APP = "bench-xxl"
EXECUTORS = 2


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def sql(query: str) -> list[list[str]]:
    out = subprocess.run(
        ["psql", E["STACK_DSN"], "-qtAX", "-F", " ", "-c", query],
        check=True,
        capture_output=True,
        text=True,
    )
    return [line.split() for line in out.stdout.splitlines() if line.strip()]


def create_jobs(sched: grpc.Channel, admin: tuple, rate: int) -> tuple[int, list]:
    jobs = job_admin_pb2_grpc.JobAdminServiceStub(sched)
    t0 = int(time.time()) + 5 + max(1, rate // 250)
    ids = []
    for i in range(rate):
        schedule = types_pb2.Schedule(fix_rate=types_pb2.FixRateSchedule(interval_seconds=1))
        schedule.fix_rate.start_time.FromNanoseconds(int((t0 + i / rate) * 1e9))
        job = types_pb2.Job(
            app=APP,
            name=f"bench-xxl-{i}",
            handler="echo",
            param=f"job {i}",
            schedule=schedule,
            routing_strategy=types_pb2.ROUTING_STRATEGY_ROUND,
            enabled=True,
        )
        ids.append(jobs.CreateJob(job_admin_pb2.CreateJobRequest(job=job), metadata=admin).job.id)
    return t0, ids


def pause(sched: grpc.Channel, admin: tuple, ids: list) -> None:
    jobs = job_admin_pb2_grpc.JobAdminServiceStub(sched)
    for job_id in ids:
        for attempt in range(5):
            try:
                jobs.PauseJob(job_admin_pb2.PauseJobRequest(id=job_id), metadata=admin)
                break
            except grpc.RpcError as e:
                # A connection idle through the measurement may be gone: the next try redials.
                if e.code() != grpc.StatusCode.UNAVAILABLE or attempt == 4:
                    raise
                time.sleep(0.2)


def arrivals() -> list[tuple[int, int]]:
    out = []
    for i in range(EXECUTORS):
        path = os.path.join(E["XXLB_WORK"], f"arrivals-{i}")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    out.append((int(parts[0]), int(parts[1])))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--warmup", type=float, default=8)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--grace", type=float, default=10)
    a = ap.parse_args()
    with open(os.path.join(E["STACK_TOK"], "admin")) as f:
        admin = (("authorization", "Bearer " + f.read().strip()),)
    reg = grpc.insecure_channel(E["XXLB_REGISTRY"])
    sched = grpc.insecure_channel(E["XXLB_SCHEDULER"])
    try:
        lister = registry_pb2_grpc.RegistryServiceStub(reg)
        req = registry_pb2.ListExecutorsRequest(app=APP)
        end = time.monotonic() + 30
        while len(lister.ListExecutors(req, metadata=admin).executors) < EXECUTORS:
            if time.monotonic() > end:
                print(
                    "xxl: the XXL executors did not come online within 30 s",
                    file=sys.stderr,
                )
                return 1
            time.sleep(0.1)
        t0, ids = create_jobs(sched, admin, a.rate)
        w0, w1 = t0 + a.warmup, t0 + a.warmup + a.duration
        time.sleep(max(0.0, w1 + a.grace - time.time()))
        pause(sched, admin, ids)
        # Every fire due in the window, and the runs made of them (run id, fire, scheduled µs).
        due = {
            int(r[0])
            for r in sql(
                "SELECT f.id FROM fires f JOIN jobs j ON j.id = f.job_id "
                f"WHERE j.app = '{APP}' AND f.trigger_type = {types_pb2.TRIGGER_TYPE_FIX_RATE} "
                f"AND f.scheduled_at >= to_timestamp({w0}) AND f.scheduled_at < to_timestamp({w1})"
            )
        }
        run_fire: dict[int, tuple[int, int]] = {}
        made: list[float] = []  # Run row written by a dispatcher - scheduled time.
        for r in sql(
            "SELECT r.id, r.fire_id, (EXTRACT(EPOCH FROM f.scheduled_at) * 1000000)::BIGINT, "
            "(EXTRACT(EPOCH FROM r.trigger_time - f.scheduled_at) * 1000)::BIGINT "
            f"FROM runs r JOIN fires f ON f.id = r.fire_id WHERE r.app = '{APP}' "
            f"AND f.scheduled_at >= to_timestamp({w0}) AND f.scheduled_at < to_timestamp({w1})"
        ):
            run_fire[int(r[0])] = (int(r[1]), int(r[2]))
            made.append(float(r[3]))
        seen_runs: dict[int, int] = {}
        seen_fires: dict[int, int] = {}
        late: list[float] = []
        for log_id, at_us in arrivals():
            seen_runs[log_id] = seen_runs.get(log_id, 0) + 1
            if log_id not in run_fire:
                continue
            fire, sched_us = run_fire[log_id]
            seen_fires[fire] = seen_fires.get(fire, 0) + 1
            if seen_fires[fire] == 1:
                late.append((at_us - sched_us) / 1000)
        arrived = due & set(seen_fires)
        dup = sum(n - 1 for n in seen_runs.values() if n > 1)
        dup += sum(n - 1 for n in seen_fires.values() if n > 1)
        lost = len(due - arrived)
        print(
            f"xxl: executors={EXECUTORS} rate_per_s={a.rate} "
            f"achieved_per_s={len(arrived) / a.duration:.1f} "
            f"p50_ms={percentile(late, 0.5):.1f} p99_ms={percentile(late, 0.99):.1f} "
            f"max_ms={max(late, default=0):.1f} lost={lost} dup={dup} due={len(due)} "
            f"window_s={a.duration:g} run_row_p50_ms={percentile(made, 0.5):.1f} "
            f"run_rows={len(made)}"
        )
        return 0 if lost == 0 and dup == 0 and due else 1
    finally:
        reg.close()
        sched.close()


if __name__ == "__main__":
    sys.exit(main())
