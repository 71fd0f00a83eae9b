"""What the RunManager keeps of a run (RunState), its options, the handlers' specs and the
result codes and status names of the run log's "ended" line."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from jobwheel.context import TRIGGER_NAMES, Cancellation, JobContext, RunLogger
from jobwheel.lane import Lane
from jobwheel.run_log import RunLog
from jobwheel.stubs import dispatcher_pb2, executor_pb2, types_pb2

OK_CODE = 200
FAIL_CODE = 500
TIMEOUT_CODE = 502

STATUS_LABELS = {
    types_pb2.RUN_STATUS_SUCCEEDED: "succeeded",
    types_pb2.RUN_STATUS_FAILED: "failed",
    types_pb2.RUN_STATUS_TIMED_OUT: "timed_out",
    types_pb2.RUN_STATUS_KILLED: "killed",
    types_pb2.RUN_STATUS_LOST: "lost",
    types_pb2.RUN_STATUS_DISCARDED: "discarded",
}
STATUS_NAMES = {
    types_pb2.RUN_STATUS_SUCCEEDED: "SUCCEEDED",
    types_pb2.RUN_STATUS_FAILED: "FAILED",
    types_pb2.RUN_STATUS_TIMED_OUT: "TIMED_OUT",
    types_pb2.RUN_STATUS_KILLED: "KILLED",
    types_pb2.RUN_STATUS_DISCARDED: "DISCARDED",
}


@dataclass
class HandlerSpec:
    fn: Callable[[JobContext], Any]
    is_async: bool


def make_handler_spec(fn: Callable[[JobContext], Any]) -> HandlerSpec:
    return HandlerSpec(fn=fn, is_async=inspect.iscoroutinefunction(fn))


@dataclass
class RunManagerOptions:
    executor_address: str = ""
    cancel_grace: float = 5.0
    watchdog_interval: float = 0.02
    recent_runs: int = 10000
    fenced_runs: int = 100000
    max_threads: int = 32


@dataclass
class RunState:
    request: executor_pb2.RunRequest
    cancellation: Cancellation
    log: RunLog | None
    accepted: float
    phase: str = "queued"  # queued | running
    started: float | None = None
    deadline: float | None = None
    cancelled_at: float | None = None
    reported: bool = False
    lane: Lane | None = None
    task: Any = None  # The asyncio task of an async handler.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> int:
        return self.request.run_id

    def write(self, line: str) -> None:
        if self.log is not None:
            self.log.write(line)


def ended_line(r: dispatcher_pb2.RunResult) -> str:
    name = STATUS_NAMES.get(r.status, str(r.status))
    return f"run {r.run_id} ended: {name} (code {r.code}) {r.message}"


def job_context(run: RunState) -> JobContext:
    """What the run's handler sees of it."""
    r = run.request
    sched = (
        r.scheduled_time.seconds + r.scheduled_time.nanos / 1e9
        if r.HasField("scheduled_time")
        else None
    )
    return JobContext(
        run_id=r.run_id,
        job_id=r.job_id,
        fire_id=r.fire_id,
        handler=r.handler,
        param=r.param,
        shard_index=r.shard_index,
        shard_total=r.shard_total,
        attempt=r.attempt,
        trigger=TRIGGER_NAMES.get(r.trigger_type, "unspecified"),
        scheduled_time=sched,
        deadline=run.deadline,
        log=RunLogger(run.write),
        cancellation=run.cancellation,
    )
