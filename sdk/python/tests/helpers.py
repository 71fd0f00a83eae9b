"""Shared test helpers: run requests, a result sink and polling with a deadline."""

from __future__ import annotations

import threading
import time
from typing import Callable

from jobwheel.stubs import dispatcher_pb2, executor_pb2


def request(run_id: int, job_id: int = 1, handler: str = "echo", **kw: object) -> object:
    r = executor_pb2.RunRequest(run_id=run_id, job_id=job_id, handler=handler, **kw)
    if "result_key" not in kw:
        r.result_key = b"k" * 32
    return r


def eventually(cond: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.01)
    raise AssertionError(f"{what} not reached within {timeout}s")


class Sink:
    def __init__(self) -> None:
        self.results: list[dispatcher_pb2.RunResult] = []
        self._mu = threading.Lock()

    def __call__(self, r: dispatcher_pb2.RunResult) -> None:
        with self._mu:
            self.results.append(r)

    def by_run(self) -> dict[int, dispatcher_pb2.RunResult]:
        with self._mu:
            return {r.run_id: r for r in self.results}

    def count(self, run_id: int) -> int:
        with self._mu:
            return sum(1 for r in self.results if r.run_id == run_id)
