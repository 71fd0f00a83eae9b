"""Delivers spooled results to DispatcherService.ReportResults until they are acknowledged.

Every result is appended to the spool first; the reporter thread lets results gather for up
to 20 ms (LINGER_S; not while flushing at shutdown), syncs the spool (one fdatasync for
everything appended since the last one) before it sends anything, sends batches of up to 500
with the executor token, and tombstones each run id the dispatcher acknowledges
or refuses for good (refused: logged once, counted in
jobwheel_executor_results_refused_total). While the dispatcher is unreachable it retries with
jittered backoff (0.1 s doubling to 5 s); a result answered but not acknowledged is retried on
its own (1 s doubling to 60 s). At start the spool's results are loaded and resent.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import grpc

from jobwheel.metrics import ExecutorMetrics
from jobwheel.spool import ResultSpool
from jobwheel.stubs import dispatcher_pb2, dispatcher_pb2_grpc

log = logging.getLogger("jobwheel")

# A result waits up to this long for others to go out with it: one fdatasync and one
# ReportResults for all of them (at hundreds of runs a second, a call per result would cost
# more CPU than the runs).
LINGER_S = 0.02


@dataclass
class _Entry:
    result: dispatcher_pb2.RunResult
    next_attempt: float = 0.0
    retry: float = 1.0
    in_flight: bool = False


class ResultReporter:
    def __init__(
        self,
        spool: ResultSpool,
        send: Callable[[list[dispatcher_pb2.RunResult]], tuple[list[int], list[int]]] | None,
        metrics: ExecutorMetrics,
        max_batch: int = 500,
        initial_backoff: float = 0.1,
        max_backoff: float = 5.0,
        linger: float = LINGER_S,
    ) -> None:
        self._spool = spool
        self._send = send
        self._metrics = metrics
        self._max_batch = max_batch
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._linger = linger
        self._cv = threading.Condition()
        self._new = 0  # Results submitted since the last batch was taken...
        self._first_new = 0.0  # ... the first of them at this time.
        self._pending: dict[int, _Entry] = {}
        self._unsynced = False
        self._stop = False
        self._flushing = False
        self._next_attempt = 0.0
        self._failures = 0
        self._thread: threading.Thread | None = None
        self._rng = random.Random()

    def start(self) -> None:
        loaded = self._spool.load_all()
        with self._cv:
            for r in loaded:
                self._pending[r.run_id] = _Entry(r)
            self._metrics.set("spool_size", len(self._pending))
        if loaded:
            log.info("result spool: %d result(s) from an earlier run will be resent", len(loaded))
        self._thread = threading.Thread(target=self._loop, name="jobwheel-reporter", daemon=True)
        self._thread.start()

    def submit(self, result: dispatcher_pb2.RunResult) -> None:
        try:
            self._spool.append(result)
        except OSError as e:
            log.error(
                "run %d: cannot spool result (%s); keeping it in memory only", result.run_id, e
            )
        with self._cv:
            self._unsynced = True
            if self._new == 0:
                self._first_new = time.monotonic()
            self._new += 1
            self._pending[result.run_id] = _Entry(result)
            self._metrics.set("spool_size", len(self._pending))
            # The reporter needs waking for the first result of a batch (it then sleeps out
            # the linger) and for a full batch; not for each result in between.
            if self._new == 1 or self._new >= self._max_batch or self._linger <= 0:
                self._cv.notify_all()

    def pending(self) -> int:
        with self._cv:
            return len(self._pending)

    def flush(self, timeout: float) -> int:
        """Tries to deliver everything for up to `timeout` s; returns how many are left."""
        end = time.monotonic() + timeout
        with self._cv:
            if self._send is None or self._thread is None:
                return len(self._pending)
            self._flushing = True
            self._next_attempt = 0.0
            for e in self._pending.values():
                e.next_attempt = 0.0
            self._cv.notify_all()
            while self._pending and not self._stop:
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(left)
            self._flushing = False
            return len(self._pending)

    def shutdown(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(10)
        try:
            self._spool.sync()
        except OSError as e:
            log.error("result spool: %s", e)

    def _backoff(self) -> float:
        base = min(self._max_backoff, self._initial_backoff * (2 ** min(self._failures - 1, 30)))
        if self._flushing:
            base = min(base, 0.2)
        return base * (0.5 + self._rng.random() / 2)

    def _loop(self) -> None:
        with self._cv:
            while not self._stop:
                linger_left = self._first_new + self._linger - time.monotonic()
                if (
                    self._new
                    and linger_left > 0
                    and self._new < self._max_batch
                    and not self._flushing
                    and self._send is not None
                ):
                    self._cv.wait(linger_left)  # Let more results join this batch.
                    continue
                if self._unsynced:
                    self._unsynced = False
                    self._cv.release()
                    try:
                        self._spool.sync()
                    except OSError as e:
                        log.error("result spool: %s", e)
                    finally:
                        self._cv.acquire()
                    continue
                now = time.monotonic()
                batch: list[dispatcher_pb2.RunResult] = []
                next_ready = float("inf")
                if self._send is not None and now >= self._next_attempt:
                    for e in self._pending.values():
                        if e.in_flight:
                            continue
                        if e.next_attempt <= now:
                            if len(batch) >= self._max_batch:
                                next_ready = now
                                break
                            e.in_flight = True
                            batch.append(e.result)
                        else:
                            next_ready = min(next_ready, e.next_attempt)
                elif self._send is not None and self._pending:
                    next_ready = self._next_attempt
                self._new = 0
                if not batch:
                    self._cv.wait(
                        None if next_ready == float("inf") else max(0.0, min(0.5, next_ready - now))
                    )
                    continue
                self._cv.release()
                answer: Any = None
                error: Exception | None = None
                try:
                    answer = self._send(batch)  # type: ignore[misc]
                except Exception as e:  # noqa: BLE001 - any failure keeps them spooled
                    error = e
                finally:
                    self._cv.acquire()
                self._settle(batch, answer, error)
                self._metrics.set("spool_size", len(self._pending))
                self._cv.notify_all()

    def _settle(self, batch: list[Any], answer: Any, error: Exception | None) -> None:
        after = time.monotonic()
        if error is not None:
            self._failures += 1
            if self._failures == 1 or self._failures % 20 == 0:
                log.warning(
                    "reporting %d result(s) failed (%d attempt(s)): %s; they stay spooled",
                    len(batch),
                    self._failures,
                    _describe(error),
                )
            self._next_attempt = after + self._backoff()
            for r in batch:
                e = self._pending.get(r.run_id)
                if e is not None:
                    e.in_flight = False
            return
        if self._failures > 0:
            log.info("dispatcher reachable again; reporting results")
        self._failures = 0
        self._next_attempt = 0.0
        acked, refused = answer
        settled = []
        for rid, was_refused in [(i, False) for i in acked] + [(i, True) for i in refused]:
            e = self._pending.get(rid)
            if e is None or not e.in_flight:
                continue
            if was_refused:
                log.error(
                    "run %d: the dispatcher refused its result for good (no such run, or a "
                    "missing or wrong result key); dropped",
                    rid,
                )
                self._metrics.refused()
            del self._pending[rid]
            settled.append(rid)
        try:
            self._spool.remove_many(settled)
        except OSError as err:
            log.warning("result spool: %s", err)
        for r in batch:
            e = self._pending.get(r.run_id)
            if e is None or not e.in_flight:
                continue
            e.in_flight = False
            e.next_attempt = after + e.retry
            log.warning(
                "run %d: dispatcher did not acknowledge the result; retrying in %gs",
                r.run_id,
                e.retry,
            )
            e.retry = min(e.retry * 2, 60.0)


def _describe(e: Exception) -> str:
    if isinstance(e, grpc.RpcError):
        return f"{e.code().name}: {e.details()}"  # type: ignore[attr-defined]
    return f"{type(e).__name__}: {e}"


def grpc_sender(
    channel: grpc.Channel, executor_token: str, timeout: float = 10.0
) -> Callable[[list[dispatcher_pb2.RunResult]], tuple[list[int], list[int]]]:
    stub = dispatcher_pb2_grpc.DispatcherServiceStub(channel)
    metadata = (("authorization", "Bearer " + executor_token),) if executor_token else ()

    def send(batch: list[dispatcher_pb2.RunResult]) -> tuple[list[int], list[int]]:
        resp = stub.ReportResults(
            dispatcher_pb2.ReportResultsRequest(results=batch), metadata=metadata, timeout=timeout
        )
        return list(resp.acked_run_ids), list(resp.refused_run_ids)

    return send
