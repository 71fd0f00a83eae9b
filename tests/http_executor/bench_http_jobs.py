"""The HTTP jobs' bench: `rate` FIX_RATE HTTP jobs due every second, spread evenly over the
second (rate fires/s), run by one HTTP executor against an endpoint in this process that
records each request's X-Jobwheel-Run, -Fire and -Scheduled-Us headers and its arrival time.

    http_jobs: rate_per_s=R achieved_per_s=A p99_ms=P lost=L dup=D ...

achieved: fires due in the window that reached the endpoint, per second; p99_ms: arrival at
the endpoint - scheduled time; lost: fires due in the window (the fires table) that never
arrived by the end of the grace; dup: fires or run ids that arrived more than once.
bench_http_jobs.sh starts the stack and passes it in the environment.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time

import grpc

from jobwheel.v1 import (
    app_admin_pb2,
    app_admin_pb2_grpc,
    job_admin_pb2,
    job_admin_pb2_grpc,
)
from jobwheel.v1 import registry_pb2, registry_pb2_grpc, types_pb2

E = os.environ
ARRIVALS: list[tuple[int, int, int, int]] = []  # (run, fire, scheduled_us, arrived_us)
LOCK = threading.Lock()


class Endpoint(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (the http.server name)
        now_us = time.time_ns() // 1000
        try:
            row = (
                int(self.headers.get("X-Jobwheel-Run", "0")),
                int(self.headers.get("X-Jobwheel-Fire", "0")),
                int(self.headers.get("X-Jobwheel-Scheduled-Us", "0")),
                now_us,
            )
        except ValueError:
            row = (0, 0, 0, now_us)
        with LOCK:
            ARRIVALS.append(row)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def start_executor(endpoint: str, work: str) -> subprocess.Popen[bytes]:
    tok = E["STACK_TOK"]
    log = open(os.path.join(work, "http_executor.log"), "ab")
    return subprocess.Popen(
        [
            os.path.join(E["STACK_BIN"], "services/http_executor/http_executor"),
            f"--listen=127.0.0.1:{E['HTTPB_EXECUTOR_PORT']}",
            "--app=bench-http",
            f"--registry_target={E['HTTPB_REGISTRY']}",
            f"--dispatcher_target={E['HTTPB_DISPATCHER']}",
            f"--executor_token_file={tok}/executor",
            f"--dispatcher_public_key_file={tok}/dispatcher.pub",
            f"--scheduler_public_key_file={tok}/scheduler.pub",
            f"--log_dir={work}/logs",
            f"--spool_dir={work}/spool",
            f"--allow_hosts={endpoint}",
            "--metrics_address=",
            "--capacity=256",
            "--log_level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def create_jobs(sched: grpc.Channel, admin: tuple, rate: int, endpoint: str) -> tuple[int, list]:
    jobs = job_admin_pb2_grpc.JobAdminServiceStub(sched)
    t0 = int(time.time()) + 5 + max(1, rate // 250)
    param = json.dumps({"url": f"http://{endpoint}/bench", "timeout": "5s"})
    ids = []
    for i in range(rate):
        schedule = types_pb2.Schedule(fix_rate=types_pb2.FixRateSchedule(interval_seconds=1))
        schedule.fix_rate.start_time.FromNanoseconds(int((t0 + i / rate) * 1e9))
        job = types_pb2.Job(
            app="bench-http",
            name=f"bench-http-{i}",
            handler="http",
            param=param,
            schedule=schedule,
            routing_strategy=types_pb2.ROUTING_STRATEGY_FIRST,
            enabled=True,
        )
        req = job_admin_pb2.CreateJobRequest(job=job)
        ids.append(jobs.CreateJob(req, metadata=admin).job.id)
    return t0, ids


def due_fires(w0: float, w1: float) -> set[int]:
    sql = (
        "SELECT f.id FROM fires f JOIN jobs j ON j.id = f.job_id WHERE j.app = 'bench-http' "
        f"AND f.trigger_type = {types_pb2.TRIGGER_TYPE_FIX_RATE} "
        f"AND f.scheduled_at >= to_timestamp({w0}) AND f.scheduled_at < to_timestamp({w1})"
    )
    out = subprocess.run(
        ["psql", E["STACK_DSN"], "-qtAX", "-c", sql],
        check=True,
        capture_output=True,
        text=True,
    )
    return {int(x) for x in out.stdout.split()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=500)
    ap.add_argument("--warmup", type=float, default=8)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--grace", type=float, default=10)
    a = ap.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"127.0.0.1:{server.server_address[1]}"
    with open(os.path.join(E["STACK_TOK"], "admin")) as f:
        admin = (("authorization", "Bearer " + f.read().strip()),)
    reg = grpc.insecure_channel(E["HTTPB_REGISTRY"])
    sched = grpc.insecure_channel(E["HTTPB_SCHEDULER"])
    try:
        app = types_pb2.App(name="bench-http")
        app_admin_pb2_grpc.AppAdminServiceStub(reg).CreateApp(
            app_admin_pb2.CreateAppRequest(app=app), metadata=admin
        )
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.ALREADY_EXISTS:
            raise
    executor = start_executor(endpoint, E["HTTPB_WORK"])
    try:
        lister = registry_pb2_grpc.RegistryServiceStub(reg)
        end = time.monotonic() + 30
        req = registry_pb2.ListExecutorsRequest(app="bench-http")
        while not lister.ListExecutors(req, metadata=admin).executors:
            if time.monotonic() > end:
                print(
                    "http_jobs: the HTTP executor did not register within 30 s",
                    file=sys.stderr,
                )
                return 1
            time.sleep(0.1)
        t0, ids = create_jobs(sched, admin, a.rate, endpoint)
        w0, w1 = t0 + a.warmup, t0 + a.warmup + a.duration
        time.sleep(max(0.0, w1 + a.grace - time.time()))
        jobs = job_admin_pb2_grpc.JobAdminServiceStub(sched)
        for job_id in ids:
            jobs.PauseJob(job_admin_pb2.PauseJobRequest(id=job_id), metadata=admin)
        due = due_fires(w0, w1)
        fires: dict[int, int] = {}
        runs: dict[int, int] = {}
        late: list[float] = []
        with LOCK:
            arrivals = list(ARRIVALS)
        for run_id, fire_id, sched_us, arrived_us in arrivals:
            runs[run_id] = runs.get(run_id, 0) + 1
            fires[fire_id] = fires.get(fire_id, 0) + 1
            if fire_id in due:
                late.append((arrived_us - sched_us) / 1000)
        arrived = due & set(fires)
        dup = sum(n - 1 for n in fires.values() if n > 1)
        dup += sum(n - 1 for n in runs.values() if n > 1)
        lost = len(due - arrived)
        print(
            f"http_jobs: rate_per_s={a.rate} achieved_per_s={len(arrived) / a.duration:.1f} "
            f"p50_ms={percentile(late, 0.5):.1f} p99_ms={percentile(late, 0.99):.1f} "
            f"max_ms={max(late, default=0):.1f} lost={lost} dup={dup} due={len(due)} "
            f"window_s={a.duration:g}"
        )
        return 0 if lost == 0 and dup == 0 and due else 1
    finally:
        executor.send_signal(signal.SIGTERM)
        try:
            executor.wait(20)
        except subprocess.TimeoutExpired:
            executor.kill()
        server.shutdown()
        reg.close()
        sched.close()


if __name__ == "__main__":
    sys.exit(main())
