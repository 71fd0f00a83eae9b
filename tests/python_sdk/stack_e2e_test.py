"""End-to-end tests of the Python SDK against a real stack (check_python_sdk_stack.sh starts
PostgreSQL, the registry and the scheduler through scripts/lib/stack.sh and passes their
addresses in the environment). This driver starts the dispatcher and the executors itself,
since it kills and restarts them: two Python demo executors (app pyapp), one Python and one C++
demo executor (app pyshard). Executions are counted in the files the Python handlers write.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from typing import Any, Callable, Iterator

import grpc
import pytest
from google.protobuf import json_format

from jobwheel.caller_token import generate_key_pair, sign_caller_token
from jobwheel.v1 import (
    app_admin_pb2,
    app_admin_pb2_grpc,
    executor_pb2,
    executor_pb2_grpc,
    job_admin_pb2,
    job_admin_pb2_grpc,
    registry_pb2,
    registry_pb2_grpc,
    types_pb2,
)

E = os.environ
ROOT = E["STACK_ROOT"]
BIN = E["STACK_BIN"]
TOK = E["STACK_TOK"]
WORK = E["PYSDK_WORK"]
REGISTRY = E["PYSDK_REGISTRY"]
SCHEDULER = E["PYSDK_SCHEDULER"]
DISPATCHER = E["PYSDK_DISPATCHER"]
PORTS = [int(p) for p in E["PYSDK_PORTS"].split()]
DSN = E["STACK_DSN"]
S = types_pb2


def read(path: str) -> str:
    with open(os.path.join(TOK, path)) as f:
        return f.read().strip()


ADMIN = (("authorization", "Bearer " + read("admin")),)


def eventually(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    end = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < end:
        last = cond()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout}s (last: {last!r})")


class Proc:
    def __init__(self, name: str, cmd: list[str]) -> None:
        self.name, self.cmd = name, cmd
        self.log = os.path.join(WORK, f"{name}.log")
        self.p: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        out = open(self.log, "ab")
        self.p = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT)
        out.close()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.p is not None and self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()

    @property
    def pid(self) -> int:
        assert self.p is not None
        return self.p.pid


def py_executor(name: str, port: int, app: str, mport: int) -> Proc:
    return Proc(
        name,
        [
            "/usr/bin/python3",
            os.path.join(ROOT, "sdk/python/examples/demo_executor.py"),
            f"--listen=127.0.0.1:{port}",
            f"--app={app}",
            f"--registry_target={REGISTRY}",
            f"--dispatcher_target={DISPATCHER}",
            f"--executor_token_file={TOK}/executor",
            f"--dispatcher_public_key_file={TOK}/dispatcher.pub",
            f"--scheduler_public_key_file={TOK}/scheduler.pub",
            f"--log_dir={WORK}/{name}/logs",
            f"--spool_dir={WORK}/{name}/spool",
            f"--record_file={WORK}/executions.log",
            f"--stubs_dir={E['JOBWHEEL_PY_STUBS']}",
            f"--metrics_address=127.0.0.1:{mport}",
            "--grace_period=2",
        ],
    )


def executions() -> list[tuple[int, int]]:
    try:
        with open(os.path.join(WORK, "executions.log")) as f:
            return [(int(w[0]), int(w[1])) for w in (ln.split() for ln in f if ln.strip())]
    except FileNotFoundError:
        return []


@pytest.fixture(scope="module")
def stack() -> Iterator[dict[str, Any]]:
    procs: list[Proc] = []
    disp = Proc(
        "dispatcher",
        [
            f"{BIN}/services/dispatcher/dispatcher",
            f"--listen={DISPATCHER}",
            f"--db_dsn={DSN}",
            f"--registry_target={REGISTRY}",
            f"--signing_key_file={TOK}/dispatcher.key",
            f"--scheduler_public_key_file={TOK}/scheduler.pub",
            f"--executor_token_file={TOK}/executor",
            "--metrics_address=",
        ],
    )
    procs.append(disp)
    reg = grpc.insecure_channel(REGISTRY)
    sched = grpc.insecure_channel(SCHEDULER)
    apps = app_admin_pb2_grpc.AppAdminServiceStub(reg)
    for app in ("pyapp", "pyshard", "demo-py"):
        try:
            apps.CreateApp(
                app_admin_pb2.CreateAppRequest(app=types_pb2.App(name=app)), metadata=ADMIN
            )
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.ALREADY_EXISTS:
                raise
    a = py_executor("py_a", PORTS[0], "pyapp", PORTS[4])
    b = py_executor("py_b", PORTS[1], "pyapp", PORTS[5])
    c = py_executor("py_shard", PORTS[2], "pyshard", PORTS[6])
    cpp = Proc(
        "cpp_shard",
        [
            f"{BIN}/sdk/examples/demo_executor",
            f"--listen=127.0.0.1:{PORTS[3]}",
            "--app=pyshard",
            f"--registry_target={REGISTRY}",
            f"--dispatcher_target={DISPATCHER}",
            f"--executor_token_file={TOK}/executor",
            f"--dispatcher_public_key_file={TOK}/dispatcher.pub",
            f"--scheduler_public_key_file={TOK}/scheduler.pub",
            f"--log_dir={WORK}/cpp_shard/logs",
            f"--spool_dir={WORK}/cpp_shard/spool",
            "--metrics_address=",
        ],
    )
    procs += [a, b, c, cpp]
    lister = registry_pb2_grpc.RegistryServiceStub(reg)

    def online(app: str) -> list[Any]:
        resp = lister.ListExecutors(registry_pb2.ListExecutorsRequest(app=app), metadata=ADMIN)
        return list(resp.executors)

    try:
        eventually(lambda: len(online("pyapp")) == 2, 30, "two Python executors online")
        eventually(lambda: len(online("pyshard")) == 2, 30, "the shard executors online")
        eventually(lambda: len(online("demo-py")) == 1, 30, "stack_start_python_executor's one")
        yield {
            "jobs": job_admin_pb2_grpc.JobAdminServiceStub(sched),
            "online": online,
            "a": a,
            "b": b,
            "py_shard": c,
            "dispatcher": disp,
        }
    finally:
        for p in reversed(procs):
            p.kill(signal.SIGTERM)
        reg.close()
        sched.close()


def make_job(s: dict[str, Any], name: str, app: str, handler: str, **kw: Any) -> int:
    job = types_pb2.Job(
        app=app,
        name=name,
        handler=handler,
        schedule=types_pb2.Schedule(none=types_pb2.NoSchedule()),
        enabled=True,
        **kw,
    )
    resp = s["jobs"].CreateJob(job_admin_pb2.CreateJobRequest(job=job), metadata=ADMIN)
    return int(resp.job.id)


def trigger(s: dict[str, Any], job_id: int) -> None:
    s["jobs"].TriggerJob(job_admin_pb2.TriggerJobRequest(id=job_id), metadata=ADMIN)


def runs(s: dict[str, Any], job_id: int) -> list[Any]:
    resp = s["jobs"].ListRuns(job_admin_pb2.ListRunsRequest(job_id=job_id), metadata=ADMIN)
    return sorted(resp.runs, key=lambda r: r.id)


def ended(s: dict[str, Any], job_id: int, n: int, timeout: float = 20) -> list[Any]:
    terminal = {
        S.RUN_STATUS_SUCCEEDED,
        S.RUN_STATUS_FAILED,
        S.RUN_STATUS_TIMED_OUT,
        S.RUN_STATUS_KILLED,
        S.RUN_STATUS_LOST,
        S.RUN_STATUS_DISCARDED,
    }

    def done() -> list[Any] | None:
        rs = runs(s, job_id)
        return rs if len(rs) >= n and all(r.status in terminal for r in rs) else None

    return eventually(done, timeout, f"{n} run(s) of job {job_id} ended")


def status_name(r: Any) -> str:
    return S.RunStatus.Name(r.status)


def test_registers_with_the_python_sdk_version_and_runs(stack: dict[str, Any]) -> None:
    ex = stack["online"]("pyapp")
    assert {e.sdk_version for e in ex} == {"jobwheel-python/0.1"}
    assert all(len(e.instance) == 32 for e in ex), ex
    job = make_job(stack, "py-echo", "pyapp", "echo", param="hello python")
    trigger(stack, job)
    [run] = ended(stack, job, 1)
    assert status_name(run) == "RUN_STATUS_SUCCEEDED", run
    assert run.result_message == "hello python"
    assert [pid for rid, pid in executions() if rid == run.id] != []
    assert len([1 for rid, _ in executions() if rid == run.id]) == 1
    log = stack["jobs"].GetRunLog(job_admin_pb2.GetRunLogRequest(id=run.id), metadata=ADMIN)
    assert any("echo: hello python" in ln for ln in log.lines), list(log.lines)


def test_the_scripts_up_python_executor_and_its_demo_job(stack: dict[str, Any]) -> None:
    """stack_start_python_executor's executor (app demo-py) runs scripts/up's demo job."""
    [ex] = stack["online"]("demo-py")
    assert ex.address == f"127.0.0.1:{PORTS[7]}" and ex.sdk_version == "jobwheel-python/0.1"
    with open(os.path.join(ROOT, "scripts/demo/python/demo-py-echo.json")) as f:
        job = json_format.Parse(f.read(), types_pb2.Job())
    resp = stack["jobs"].CreateJob(job_admin_pb2.CreateJobRequest(job=job), metadata=ADMIN)
    job_id = int(resp.job.id)

    def succeeded() -> Any:
        return next((r for r in runs(stack, job_id) if r.status == S.RUN_STATUS_SUCCEEDED), None)

    run = eventually(succeeded, 20, "a SUCCEEDED run of the demo job")
    assert run.result_message == "hello from the Python SDK"
    stack["jobs"].PauseJob(job_admin_pb2.PauseJobRequest(id=job_id), metadata=ADMIN)


def test_kill_and_timeout(stack: dict[str, Any]) -> None:
    job = make_job(stack, "py-kill", "pyapp", "sleep", param="20000")
    trigger(stack, job)
    run = eventually(
        lambda: next((r for r in runs(stack, job) if r.status == S.RUN_STATUS_RUNNING), None),
        15,
        "the sleep run RUNNING",
    )
    stack["jobs"].KillRun(job_admin_pb2.KillRunRequest(id=run.id), metadata=ADMIN)
    [killed] = ended(stack, job, 1, timeout=10)
    assert status_name(killed) == "RUN_STATUS_KILLED", killed
    timeout = make_job(stack, "py-timeout", "pyapp", "sleep", param="10000", timeout={"seconds": 1})
    trigger(stack, timeout)
    [t] = ended(stack, timeout, 1, timeout=15)
    assert status_name(t) == "RUN_STATUS_TIMED_OUT", t
    assert "timed out after 1s" in t.result_message


def test_shard_broadcast_over_a_python_and_a_cpp_executor(stack: dict[str, Any]) -> None:
    job = make_job(
        stack,
        "py-shard",
        "pyshard",
        "shard",
        routing_strategy=S.ROUTING_STRATEGY_SHARDING_BROADCAST,
    )
    trigger(stack, job)
    rs = ended(stack, job, 2)
    assert len(rs) == 2
    assert all(status_name(r) == "RUN_STATUS_SUCCEEDED" for r in rs), rs
    assert sorted(r.result_message for r in rs) == ["shard 0/2", "shard 1/2"]
    assert len({r.executor_address for r in rs}) == 2
    py_addr = f"127.0.0.1:{PORTS[2]}"
    py_run = next(r for r in rs if r.executor_address == py_addr)
    assert [pid for rid, pid in executions() if rid == py_run.id] == [stack["py_shard"].pid]


def test_forged_or_missing_tokens_are_refused(stack: dict[str, Any]) -> None:
    addr = f"127.0.0.1:{PORTS[0]}"
    ch = grpc.insecure_channel(addr)
    stub = executor_pb2_grpc.ExecutorServiceStub(ch)
    req = executor_pb2.RunRequest(run_id=987654321, job_id=1, handler="echo", app="pyapp")
    with open(os.path.join(TOK, "dispatcher.key"), "rb") as f:
        real = f.read()
    forged, _ = generate_key_pair()
    cases = {
        "missing": (),
        "executor token": (("authorization", "Bearer " + read("executor")),),
        "forged": (
            ("authorization", "Bearer " + sign_caller_token(forged, "dispatcher", "pyapp@" + addr)),
        ),
        "bare address audience": (
            ("authorization", "Bearer " + sign_caller_token(real, "dispatcher", addr)),
        ),
        "another app's audience": (
            ("authorization", "Bearer " + sign_caller_token(real, "dispatcher", "pyshard@" + addr)),
        ),
    }
    for what, md in cases.items():
        with pytest.raises(grpc.RpcError) as e:
            stub.Run(req, metadata=md)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED, what
    ok = (("authorization", "Bearer " + sign_caller_token(real, "dispatcher", "pyapp@" + addr)),)
    resp = stub.Run(req, metadata=ok)  # A valid token, but not this instance's run.
    assert resp.disposition == executor_pb2.RUN_DISPOSITION_REJECTED
    ch.close()
    assert all(rid != 987654321 for rid, _ in executions())


def metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"{name} not exported")


def test_results_replayed_from_the_spool_after_a_dispatcher_restart(stack: dict[str, Any]) -> None:
    job = make_job(stack, "py-spool", "pyapp", "sleep", param="2000")
    trigger(stack, job)
    run = eventually(
        lambda: next((r for r in runs(stack, job) if r.status == S.RUN_STATUS_RUNNING), None),
        15,
        "the run RUNNING",
    )
    stack["dispatcher"].kill(signal.SIGKILL)
    port = PORTS[4] if run.executor_address.endswith(f":{PORTS[0]}") else PORTS[5]
    eventually(lambda: metric(port, "jobwheel_executor_spool_size") >= 1, 10, "result spooled")
    time.sleep(0.5)  # The result is kept while the dispatcher stays down (nothing to await).
    assert metric(port, "jobwheel_executor_spool_size") >= 1
    assert runs(stack, job)[0].status == S.RUN_STATUS_RUNNING
    stack["dispatcher"].start()
    [done] = ended(stack, job, 1, timeout=20)
    assert status_name(done) == "RUN_STATUS_SUCCEEDED", done
    assert len([1 for rid, _ in executions() if rid == run.id]) == 1
    eventually(lambda: metric(port, "jobwheel_executor_spool_size") == 0, 10, "spool drained")


def test_sigterm_says_goodbye_and_drains(stack: dict[str, Any]) -> None:
    """SIGTERM: the goodbye takes the executor offline at once, so the scheduler settles its
    running run (LOST, and kills it here: LostRunKiller; or FAILED "executor shut down" if
    that result comes first); the process drains (grace 2 s) and exits 0."""
    eventually(lambda: len(stack["online"]("pyapp")) == 2, 20, "two executors online")
    long = make_job(stack, "py-drain", "pyapp", "sleep", param="20000")
    trigger(stack, long)
    run = eventually(
        lambda: next((r for r in runs(stack, long) if r.status == S.RUN_STATUS_RUNNING), None),
        15,
        "the run RUNNING",
    )
    proc = stack["a"] if run.executor_address.endswith(f":{PORTS[0]}") else stack["b"]
    eventually(lambda: (run.id, proc.pid) in executions(), 5, "the handler started")
    assert proc.p is not None
    t0 = time.monotonic()
    proc.p.send_signal(signal.SIGTERM)
    eventually(
        lambda: run.executor_address not in {e.address for e in stack["online"]("pyapp")},
        5,
        "offline after the goodbye",
    )
    assert proc.p.poll() is None  # Still draining.
    assert proc.p.wait(15) == 0
    took = time.monotonic() - t0
    assert took < 12, f"exited {took:.1f}s after SIGTERM"
    [done] = ended(stack, long, 1, timeout=10)
    assert status_name(done) in ("RUN_STATUS_LOST", "RUN_STATUS_FAILED"), done
    if done.status == S.RUN_STATUS_FAILED:
        assert done.result_message == "executor shut down"
    assert [p for r, p in executions() if r == run.id] == [proc.pid]
    proc.start()
    eventually(lambda: len(stack["online"]("pyapp")) == 2, 20, "the executor back online")


def test_kill_9_is_lost_fast_and_the_retry_runs_on_the_other_executor(
    stack: dict[str, Any],
) -> None:
    job = make_job(stack, "py-failover", "pyapp", "sleep", param="30000", fail_retry_count=1)
    # Both executors online again after the earlier tests.
    eventually(lambda: len(stack["online"]("pyapp")) == 2, 20, "two executors online")
    trigger(stack, job)
    first = eventually(
        lambda: next((r for r in runs(stack, job) if r.status == S.RUN_STATUS_RUNNING), None),
        15,
        "the 30 s run RUNNING",
    )
    victim, other = (
        (stack["a"], stack["b"])
        if first.executor_address.endswith(f":{PORTS[0]}")
        else (stack["b"], stack["a"])
    )
    eventually(lambda: (first.id, victim.pid) in executions(), 5, "the handler started")
    killed_wall = time.time()
    victim.kill(signal.SIGKILL)

    def lost() -> Any:
        rs = runs(stack, job)
        return rs[0] if rs[0].status == S.RUN_STATUS_LOST else None

    lost_run = eventually(lost, 10, "the run LOST")
    took = lost_run.end_time.ToNanoseconds() / 1e9 - killed_wall
    print(f"run {first.id}: LOST {took:.2f}s after kill -9")
    assert took <= 2.0, f"LOST {took:.2f}s after kill -9"
    retry = eventually(
        lambda: next(
            (r for r in runs(stack, job) if r.id != first.id and r.status == S.RUN_STATUS_RUNNING),
            None,
        ),
        15,
        "the retry RUNNING",
    )
    assert retry.attempt == 1
    assert retry.executor_address != first.executor_address
    eventually(lambda: (retry.id, other.pid) in executions(), 5, "the retry's handler started")
    stack["jobs"].KillRun(job_admin_pb2.KillRunRequest(id=retry.id), metadata=ADMIN)
    ended(stack, job, 2, timeout=15)
    ex = executions()
    assert [p for r, p in ex if r == first.id] == [victim.pid]
    assert [p for r, p in ex if r == retry.id] == [other.pid]
    victim.start()  # For any later test; the fixture stops it.


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
