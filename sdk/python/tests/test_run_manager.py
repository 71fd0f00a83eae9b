from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import pytest
from helpers import Sink, eventually, request

from jobwheel.context import JobContext
from jobwheel.metrics import ExecutorMetrics
from jobwheel.run_log import RunLogStore
from jobwheel.run_manager import RunManager, RunManagerOptions, make_handler_spec
from jobwheel.stubs import executor_pb2, types_pb2

D = executor_pb2
S = types_pb2


class Gate:
    """A handler that blocks until released (or cancelled), counting its executions."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started: list[int] = []
        self.mu = threading.Lock()

    def __call__(self, ctx: JobContext) -> str:
        with self.mu:
            self.started.append(ctx.run_id)
        while not self.release.wait(0.01):
            if ctx.cancelled:
                raise ctx.Cancelled()
        return f"done {ctx.run_id}"


def manager(tmp: Any, handlers: dict[str, Any], sink: Sink, **opts: Any) -> RunManager:
    logs = RunLogStore(os.path.join(str(tmp), "logs"), __import__("time").time)
    logs.init()
    m = RunManager(
        RunManagerOptions(executor_address="127.0.0.1:1", **opts),
        {n: make_handler_spec(f) for n, f in handlers.items()},
        logs,
        sink,
        ExecutorMetrics(),
    )
    m.start()
    return m


def test_serial_execution_queues_in_order(tmp_path: Any) -> None:
    gate, sink = Gate(), Sink()
    m = manager(tmp_path, {"g": gate}, sink)
    assert m.submit(request(1, handler="g"))[0] == D.RUN_DISPOSITION_STARTED
    d, msg = m.submit(request(2, handler="g"))
    assert d == D.RUN_DISPOSITION_QUEUED and "queued behind run 1 of job 1" in msg
    assert m.job_load(1) == (1, 1)
    metrics = m._metrics
    assert (metrics.running, metrics.queue_depth) == (1, 1)
    gate.release.set()
    eventually(lambda: len(sink.results) == 2)
    eventually(lambda: (metrics.running, metrics.queue_depth) == (0, 0), what="gauges at 0")
    assert metrics.runs_total["succeeded"] == 2 and metrics.runs_total["failed"] == 0
    assert 'jobwheel_executor_runs_total{status="succeeded"} 2' in metrics.exposition()
    assert gate.started == [1, 2]
    assert all(r.status == S.RUN_STATUS_SUCCEEDED for r in sink.results)
    assert sink.by_run()[1].message == "done 1" and sink.by_run()[1].code == 200
    assert sink.by_run()[1].result_key == b"k" * 32
    assert sink.by_run()[1].executor_address == "127.0.0.1:1"


def test_discard_later_refuses_while_busy(tmp_path: Any) -> None:
    gate, sink = Gate(), Sink()
    m = manager(tmp_path, {"g": gate}, sink)
    m.submit(request(1, handler="g", block_strategy=S.BLOCK_STRATEGY_DISCARD_LATER))
    d, msg = m.submit(request(2, handler="g", block_strategy=S.BLOCK_STRATEGY_DISCARD_LATER))
    assert d == D.RUN_DISPOSITION_DISCARDED
    assert msg == "block strategy DISCARD_LATER: job 1 is busy with run 1"
    # Asked again: the same refusal, never run.
    d2, msg2 = m.submit(request(2, handler="g"))
    assert d2 == D.RUN_DISPOSITION_DISCARDED and "already refused here" in msg2
    gate.release.set()
    eventually(lambda: len(sink.results) == 1)
    assert gate.started == [1]
    assert sink.count(2) == 0


def test_cover_early_cancels_running_and_queued(tmp_path: Any) -> None:
    gate, sink = Gate(), Sink()
    m = manager(tmp_path, {"g": gate}, sink)
    m.submit(request(1, handler="g"))
    eventually(lambda: gate.started == [1])
    m.submit(request(2, handler="g"))
    d, msg = m.submit(request(3, handler="g", block_strategy=S.BLOCK_STRATEGY_COVER_EARLY))
    assert d == D.RUN_DISPOSITION_STARTED and "covered run(s) 1, 2" in msg
    eventually(lambda: 3 in gate.started)
    gate.release.set()
    eventually(lambda: len(sink.results) == 3)
    by = sink.by_run()
    assert by[1].status == S.RUN_STATUS_DISCARDED and by[1].message == "covered by run 3"
    assert by[2].status == S.RUN_STATUS_DISCARDED and not by[2].HasField("start_time")
    assert by[3].status == S.RUN_STATUS_SUCCEEDED
    assert 2 not in gate.started


def test_timeout_and_kill_decide_the_status(tmp_path: Any) -> None:
    gate, sink = Gate(), Sink()
    m = manager(tmp_path, {"g": gate, "h": Gate()}, sink)
    r = request(1, handler="g")
    r.timeout.FromMilliseconds(100)
    m.submit(r)
    eventually(lambda: sink.count(1) == 1)
    res = sink.by_run()[1]
    assert res.status == S.RUN_STATUS_TIMED_OUT and res.code == 502
    assert res.message == "timed out after 0.1s"
    m.submit(request(2, job_id=2, handler="h"))
    m.submit(request(3, job_id=2, handler="h"))
    assert m.kill(3, "operator") == (True, "run 3 removed from the queue")
    assert m.kill(2, "operator") == (True, "run 2 cancelled")
    eventually(lambda: sink.count(2) == 1)
    assert sink.by_run()[2].status == S.RUN_STATUS_KILLED
    assert sink.by_run()[2].message == "killed: operator"
    assert sink.by_run()[3].status == S.RUN_STATUS_KILLED
    assert m.kill(2, "again")[0] is False
    assert m.kill(99, "")[1] == "run 99 is not running or queued here"


def test_a_handler_ignoring_cancel_is_reported_after_the_grace(tmp_path: Any) -> None:
    release = threading.Event()

    def stubborn(ctx: JobContext) -> str:
        release.wait(5)
        return "late"

    sink = Sink()
    m = manager(tmp_path, {"s": stubborn}, sink, cancel_grace=0.2)
    m.submit(request(1, handler="s"))
    eventually(lambda: m.presence([1], False)[0].presence == D.RUN_PRESENCE_RUNNING)
    m.kill(1, "")
    eventually(lambda: sink.count(1) == 1, timeout=3)
    assert sink.by_run()[1].status == S.RUN_STATUS_KILLED
    release.set()
    eventually(lambda: not m.is_active(1))
    assert sink.count(1) == 1  # The late return is dropped.


def test_failures_async_handlers_and_contextvars(tmp_path: Any) -> None:
    from jobwheel import current_context

    def boom(ctx: JobContext) -> str:
        raise RuntimeError("no money")

    async def aecho(ctx: JobContext) -> str:
        await asyncio.sleep(0.01)
        c = current_context()
        assert c is not None
        return f"async {c.param}"

    started: list[int] = []

    async def along(ctx: JobContext) -> str:
        started.append(ctx.run_id)
        await asyncio.sleep(30)
        return "never"

    sink = Sink()
    loop = asyncio.new_event_loop()
    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    logs = RunLogStore(os.path.join(str(tmp_path), "logs"), __import__("time").time)
    logs.init()
    m = RunManager(
        RunManagerOptions(),
        {
            "boom": make_handler_spec(boom),
            "aecho": make_handler_spec(aecho),
            "along": make_handler_spec(along),
        },
        logs,
        sink,
        ExecutorMetrics(),
        loop_provider=lambda: loop,
    )
    m.start()
    m.submit(request(1, handler="boom"))
    m.submit(request(2, job_id=2, handler="aecho", param="p"))
    eventually(lambda: len(sink.results) == 2)
    # Async runs killed at once, and while they wait: the task is cancelled, KILLED reported.
    for rid in (3, 4):
        m.submit(request(rid, job_id=rid, handler="along"))
        if rid == 4:
            eventually(lambda: m.presence([4], False)[0].presence == D.RUN_PRESENCE_RUNNING)
            eventually(lambda: 4 in started)
        assert m.kill(rid, "now")[0]
    eventually(lambda: sink.count(3) == 1 and sink.count(4) == 1, timeout=2)
    assert sink.by_run()[3].status == S.RUN_STATUS_KILLED
    assert sink.by_run()[4].status == S.RUN_STATUS_KILLED
    eventually(lambda: not m.is_active(4) and not m.is_active(3), timeout=2)
    by = sink.by_run()
    assert by[1].status == S.RUN_STATUS_FAILED and by[1].code == 500
    assert by[1].message == "handler raised: RuntimeError: no money"
    assert by[2].status == S.RUN_STATUS_SUCCEEDED and by[2].message == "async p"
    loop.call_soon_threadsafe(loop.stop)


def test_a_run_id_runs_once_even_after_a_restart(tmp_path: Any) -> None:
    runs: list[int] = []

    def count(ctx: JobContext) -> str:
        runs.append(ctx.run_id)
        return "ok"

    sink = Sink()
    m = manager(tmp_path, {"c": count}, sink)
    m.submit(request(5, handler="c"))
    eventually(lambda: sink.count(5) == 1)
    eventually(lambda: not m.is_active(5))
    d, msg = m.submit(request(5, handler="c"))
    assert d == D.RUN_DISPOSITION_STARTED and "already ran here" in msg
    assert m.presence([5], True)[0].presence == D.RUN_PRESENCE_ENDED
    assert m.presence([5], True)[0].status == S.RUN_STATUS_SUCCEEDED
    # Fenced: never run later.
    assert m.presence([6], True)[0].presence == D.RUN_PRESENCE_FENCED
    assert m.submit(request(6, handler="c")) == (
        D.RUN_DISPOSITION_REJECTED,
        "run 6 was fenced (GetRuns): never run here",
    )
    assert m.presence([7], False)[0].presence == D.RUN_PRESENCE_NOT_SEEN
    m.shutdown(1)
    # A new process on the same log directory: run 5's log says it ran.
    sink2 = Sink()
    m2 = manager(tmp_path, {"c": count}, sink2)
    d, msg = m2.submit(request(5, handler="c"))
    assert "already ran here (its run log exists)" in msg
    assert m2.presence([5], True)[0].presence == D.RUN_PRESENCE_ENDED
    assert runs == [5]
    assert sink2.results == []


def test_unknown_handler_scripts_and_bad_requests(tmp_path: Any) -> None:
    sink = Sink()
    m = manager(tmp_path, {"a": lambda c: "x", "b": lambda c: "y"}, sink)
    assert m.submit(request(1, handler="zz")) == (
        D.RUN_DISPOSITION_REJECTED,
        'handler "zz" is not registered on this executor (has: a, b)',
    )
    r = request(2, glue_type=S.GLUE_TYPE_SCRIPT_SHELL, script_source="echo hi")
    assert m.submit(r) == (D.RUN_DISPOSITION_REJECTED, "scripts are disabled on this executor")
    from jobwheel.run_request import InvalidRequest

    with pytest.raises(InvalidRequest, match="shard_index"):
        m.submit(request(3, handler="a", shard_index=2, shard_total=2))
    with pytest.raises(InvalidRequest, match="job_id"):
        m.submit(request(4, job_id=0, handler="a"))
    assert m.presence([1], False)[0].presence == D.RUN_PRESENCE_REFUSED


def test_shutdown_fails_what_does_not_finish(tmp_path: Any) -> None:
    gate, sink = Gate(), Sink()
    m = manager(tmp_path, {"g": gate}, sink)
    m.submit(request(1, handler="g"))
    m.submit(request(2, handler="g"))
    m.stop_accepting()
    assert m.submit(request(3, handler="g")) == (D.RUN_DISPOSITION_REJECTED, "shutting down")
    m.shutdown(0.1)
    by = sink.by_run()
    assert by[1].status == S.RUN_STATUS_FAILED and by[1].message == "executor shut down"
    assert by[2].status == S.RUN_STATUS_FAILED
    assert gate.started == [1]
