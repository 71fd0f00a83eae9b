"""The Python SDK's bench: `rate` FIX_RATE jobs due every second, spread evenly over the second
(rate fires/s), run by Python demo executors, measured over a window after a warmup.

    python_sdk: rate_per_s=R achieved_per_s=A p99_ms=P lost=L dup=D ...

--executor=cpp runs the same load on C++ executors (bench/bench_executor, its `noop`
handler) and prints python_sdk_cpp_reference: ... instead (what the stack gives on this
machine now, to read the Python line against).

achieved: fires due in the window whose handler started (the executors' records), per second;
p99_ms: handler start - scheduled time; lost: fires due in the window (the fires table) never
executed by the end of the grace; dup: fires or run ids executed more than once.
bench_python_sdk.sh starts the stack and passes it in the environment.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

import grpc

from jobwheel.v1 import app_admin_pb2, app_admin_pb2_grpc, job_admin_pb2, job_admin_pb2_grpc
from jobwheel.v1 import registry_pb2, registry_pb2_grpc, types_pb2

E = os.environ


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--executors", type=int, default=4)
    ap.add_argument("--warmup", type=float, default=8)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--grace", type=float, default=10)
    # cpp: the same load on C++ executors (bench/bench_executor), for comparison.
    ap.add_argument("--executor", choices=("python", "cpp"), default="python")
    a = ap.parse_args()
    if not 1 <= a.executors <= 8:
        print("python_sdk: --executors: 1 to 8", file=sys.stderr)
        return 2
    tok, work = E["STACK_TOK"], E["PYSDK_WORK"]
    with open(os.path.join(tok, "admin")) as f:
        admin = (("authorization", "Bearer " + f.read().strip()),)
    ports = [int(p) for p in E["PYSDK_PORTS"].split()]
    reg = grpc.insecure_channel(E["PYSDK_REGISTRY"])
    sched = grpc.insecure_channel(E["PYSDK_SCHEDULER"])
    app = "bench-py"
    try:
        app_admin_pb2_grpc.AppAdminServiceStub(reg).CreateApp(
            app_admin_pb2.CreateAppRequest(app=types_pb2.App(name=app)), metadata=admin
        )
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.ALREADY_EXISTS:
            raise
    record = os.path.join(work, "records")
    cpp = os.path.join(E["STACK_ROOT"], "bazel-bin/bench/bench_executor")
    if a.executor == "cpp" and not os.access(cpp, os.X_OK):
        print(f"python_sdk: skipped: {cpp} is not built (bazel build //bench:bench_executor)")
        return 77
    procs: list[subprocess.Popen[bytes]] = []
    for i in range(a.executors):
        log = open(os.path.join(work, f"py-{i}.log"), "ab")
        if a.executor == "cpp":
            cmd = [cpp, "--log_level=warn"]
        else:
            cmd = [
                "/usr/bin/python3",
                os.path.join(E["STACK_ROOT"], "sdk/python/examples/demo_executor.py"),
                f"--stubs_dir={E['JOBWHEEL_PY_STUBS']}",
                "--log_level=warning",
            ]
        cmd += [
            f"--listen=127.0.0.1:{ports[i]}",
            f"--app={app}",
            f"--registry_target={E['PYSDK_REGISTRY']}",
            f"--dispatcher_target={E['PYSDK_DISPATCHER']}",
            f"--executor_token_file={tok}/executor",
            f"--dispatcher_public_key_file={tok}/dispatcher.pub",
            f"--scheduler_public_key_file={tok}/scheduler.pub",
            f"--log_dir={work}/py-{i}/logs",
            f"--spool_dir={work}/py-{i}/spool",
            f"--record_file={record}",
        ]
        procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))
    lister = registry_pb2_grpc.RegistryServiceStub(reg)
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            r = lister.ListExecutors(registry_pb2.ListExecutorsRequest(app=app), metadata=admin)
            if len(r.executors) == a.executors:
                break
            time.sleep(0.1)
        else:
            print("python_sdk: the executors did not register within 30 s", file=sys.stderr)
            return 1
        jobs = job_admin_pb2_grpc.JobAdminServiceStub(sched)
        t0 = int(time.time()) + 5 + max(1, a.rate // 500)
        ids = []
        for i in range(a.rate):
            sched_ = types_pb2.Schedule(fix_rate=types_pb2.FixRateSchedule(interval_seconds=1))
            sched_.fix_rate.start_time.FromNanoseconds(int((t0 + i / a.rate) * 1e9))
            job = types_pb2.Job(
                app=app,
                name=f"bench-py-{i}",
                handler="noop" if a.executor == "cpp" else "echo",
                schedule=sched_,
                routing_strategy=types_pb2.ROUTING_STRATEGY_ROUND,
                enabled=True,
            )
            ids.append(
                jobs.CreateJob(job_admin_pb2.CreateJobRequest(job=job), metadata=admin).job.id
            )
        w0, w1 = t0 + a.warmup, t0 + a.warmup + a.duration
        time.sleep(max(0.0, w1 + a.grace - time.time()))
        for job_id in ids:
            jobs.PauseJob(job_admin_pb2.PauseJobRequest(id=job_id), metadata=admin)
        rows = subprocess.run(
            [
                "psql",
                E["STACK_DSN"],
                "-qtAX",
                "-c",
                "SELECT f.id FROM fires f WHERE f.job_id IN (SELECT id FROM jobs WHERE app = "
                f"'{app}') AND f.trigger_type = {types_pb2.TRIGGER_TYPE_FIX_RATE} AND "
                f"f.scheduled_at >= to_timestamp({w0}) AND f.scheduled_at < to_timestamp({w1})",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        due = {int(x) for x in rows}
        fires: dict[int, int] = {}
        runs: dict[int, int] = {}
        late: list[float] = []
        with open(record) as f:
            for line in f:
                w = line.split()
                if a.executor == "cpp" and len(w) == 6:  # run job fire attempt sched recv
                    run_id, fire_id, sched_us, recv_us = int(w[0]), int(w[2]), int(w[4]), int(w[5])
                elif a.executor == "python" and len(w) >= 7:
                    run_id, fire_id, sched_us, recv_us = int(w[0]), int(w[4]), int(w[5]), int(w[6])
                else:
                    continue
                runs[run_id] = runs.get(run_id, 0) + 1
                fires[fire_id] = fires.get(fire_id, 0) + 1
                if fire_id in due:
                    late.append((recv_us - sched_us) / 1000)
        executed = due & set(fires)
        dup = sum(n - 1 for n in fires.values() if n > 1) + sum(
            n - 1 for n in runs.values() if n > 1
        )
        label = "python_sdk" if a.executor == "python" else "python_sdk_cpp_reference"
        print(
            f"{label}: rate_per_s={a.rate} achieved_per_s={len(executed) / a.duration:.1f} "
            f"p50_ms={percentile(late, 0.5):.1f} p99_ms={percentile(late, 0.99):.1f} "
            f"max_ms={max(late, default=0):.1f} lost={len(due - set(fires))} dup={dup} "
            f"due={len(due)} executors={a.executors} window_s={a.duration:g}"
        )
        return 0 if not (due - set(fires)) and dup == 0 and due else 1
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        reg.close()
        sched.close()


if __name__ == "__main__":
    sys.exit(main())
