"""Accepts runs and executes them, applying each job's block strategy (lane.py), timeouts and
kills, and hands exactly one RunResult per accepted run to the result sink.

Sync handlers run on a bounded pool of daemon threads; async handlers on the executor's event
loop. Cancellation is cooperative: on timeout, Kill, COVER_EARLY or shutdown the run's status
is decided at once (TIMED_OUT, KILLED, DISCARDED "covered by run N", FAILED "executor shut
down"), `ctx.cancelled` turns true (an async handler's task is also cancelled), and the result
is reported when the handler returns or `cancel_grace` later, whichever comes first; a handler
result after that is dropped (a line in the run log says so).

A run id is executed at most once: an id queued, running, ended, refused or fenced here is
answered from memory (RunLedger), and an id whose run log an earlier process left on disk is
answered "already ran here". Thread-safe; one lock guards the runs, lanes and ledger use.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any, Callable

from jobwheel.context import (
    Cancellation,
    Cancelled,
    CancelReason,
    JobContext,
    reset_current,
    set_current,
)
from jobwheel.lane import AdmitKind, Lane, Lanes
from jobwheel.metrics import ExecutorMetrics
from jobwheel.run_ledger import Kind, RunLedger
from jobwheel.run_log import RunLogStore
from jobwheel.run_request import SCRIPT_GLUE_TYPES, accepted_line, timeout_seconds, validate
from jobwheel.run_state import (
    FAIL_CODE,
    OK_CODE,
    STATUS_LABELS,
    STATUS_NAMES,
    TIMEOUT_CODE,
    HandlerSpec,
    RunManagerOptions,
    RunState,
    ended_line,
    job_context,
    make_handler_spec,
)
from jobwheel.stubs import dispatcher_pb2, executor_pb2, types_pb2
from jobwheel.worker_pool import WorkerPool

__all__ = ["HandlerSpec", "RunManager", "RunManagerOptions", "make_handler_spec"]

log = logging.getLogger("jobwheel")


class RunManager:
    def __init__(
        self,
        options: RunManagerOptions,
        handlers: dict[str, HandlerSpec],
        logs: RunLogStore,
        sink: Callable[[dispatcher_pb2.RunResult], None],
        metrics: ExecutorMetrics,
        loop_provider: Callable[[], asyncio.AbstractEventLoop | None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._opt = options
        self._handlers = handlers
        self._logs = logs
        self._sink = sink
        self._metrics = metrics
        self._loop_provider = loop_provider
        self._clock = clock
        self._mu = threading.RLock()
        self._cv = threading.Condition(self._mu)  # Runs ended (shutdown waits for them).
        self._tick = threading.Condition(self._mu)  # The watchdog's sleep (woken at stop).
        self._watch_idle = False  # The watchdog sleeps until a run is watched.
        self._runs: dict[int, RunState] = {}
        self._running = 0  # Runs of _runs in phase "running".
        # Runs with a deadline or a cancel: the only ones the watchdog looks at.
        self._watched: dict[int, RunState] = {}
        self._lanes = Lanes()
        self.ledger = RunLedger(options.recent_runs, options.fenced_runs)
        self._pool = WorkerPool(options.max_threads)
        self._accepting = True
        self._stopped = False
        self._watchdog: threading.Thread | None = None
        self._address = options.executor_address

    # ---- lifecycle

    def start(self) -> None:
        self._watchdog = threading.Thread(
            target=self._watchdog_loop, name="jobwheel-watchdog", daemon=True
        )
        self._watchdog.start()

    def set_executor_address(self, address: str) -> None:
        with self._mu:
            self._address = address

    def stop_accepting(self) -> None:
        with self._mu:
            self._accepting = False

    def shutdown(self, grace: float) -> None:
        """Waits up to `grace` for queued and running runs to end, then cancels the rest
        (reported FAILED "executor shut down"). Idempotent."""
        to_report: list[tuple[RunState, dispatcher_pb2.RunResult]] = []
        with self._cv:
            self._accepting = False
            end = self._clock() + grace
            while any(not r.reported for r in self._runs.values()):
                left = end - self._clock()
                if left <= 0:
                    break
                self._cv.wait(min(left, 0.1))
            now = self._clock()
            for run in list(self._runs.values()):
                if run.reported:
                    continue
                if run.phase == "queued":
                    to_report.append(
                        self._cancel_queued(run, CancelReason.SHUTDOWN, "executor shut down", now)
                    )
                else:
                    self._cancel(run, CancelReason.SHUTDOWN, "executor shut down", now)
                    to_report.append((run, self._cancelled_result(run)))
                log.warning(
                    "run %d (job %d): not finished within the shutdown grace period; reported %s",
                    run.run_id,
                    run.request.job_id,
                    STATUS_NAMES.get(to_report[-1][1].status, "?"),
                )
            self._stopped = True
            self._cv.notify_all()
            self._tick.notify_all()
        self._report(to_report)

    # ---- submit

    def submit(self, request: executor_pb2.RunRequest) -> tuple[int, str]:
        """(disposition, message); InvalidRequest for a malformed request."""
        validate(request)
        run_id, job_id = request.run_id, request.job_id
        with self._mu:
            known = self._known(run_id)
            if known is not None:
                return known
        if self._logs.logged_earlier(run_id, self.ledger.largest_forgotten):
            with self._mu:
                known = self._known(run_id)
                if known is not None:
                    return known
                self.ledger.ended(run_id, message="ran here before (its run log exists)")
            return (
                executor_pb2.RUN_DISPOSITION_STARTED,
                f"run {run_id} already ran here (its run log exists); not run again",
            )
        if request.glue_type in SCRIPT_GLUE_TYPES:
            return self._refuse(
                run_id,
                executor_pb2.RUN_DISPOSITION_REJECTED,
                "scripts are disabled on this executor",
            )
        if request.handler not in self._handlers:
            names = ", ".join(sorted(self._handlers))
            return self._refuse(
                run_id,
                executor_pb2.RUN_DISPOSITION_REJECTED,
                f'handler "{request.handler}" is not registered on this executor (has: {names})',
            )
        to_report: list[tuple[RunState, dispatcher_pb2.RunResult]] = []
        with self._mu:
            if not self._accepting:
                return self._refuse(run_id, executor_pb2.RUN_DISPOSITION_REJECTED, "shutting down")
            known = self._known(run_id)
            if known is not None:
                return known
            adm = self._lanes.admit(job_id, request.block_strategy)
            if adm.kind is AdmitKind.DISCARD:
                return self._refuse(
                    run_id,
                    executor_pb2.RUN_DISPOSITION_DISCARDED,
                    f"block strategy DISCARD_LATER: job {job_id} is busy with run {adm.blocker}",
                )
            now = self._clock()
            covered = ""
            if adm.covered_queued or adm.covered_running is not None:
                message = f"covered by run {run_id}"
                ids = []
                for q in adm.covered_queued:
                    to_report.append(self._cancel_queued(q, CancelReason.COVERED, message, now))
                    q.write(f"run {q.run_id} {message} (COVER_EARLY) before it started")
                    ids.append(q.run_id)
                cur = adm.covered_running
                if cur is not None:
                    self._cancel(cur, CancelReason.COVERED, message, now)
                    cur.write(f"run {cur.run_id} cancelled: {message} (COVER_EARLY)")
                    ids.insert(0, cur.run_id)
                covered = "; covered run(s) " + ", ".join(str(i) for i in ids)
            run = RunState(
                request=request,
                cancellation=Cancellation(),
                log=self._logs.create(run_id),
                accepted=now,
            )
            lane = adm.lane
            assert lane is not None
            run.lane = lane
            lane.queue.append(run)
            self._runs[run_id] = run
            if adm.kind is AdmitKind.QUEUE:
                outcome = (
                    executor_pb2.RUN_DISPOSITION_QUEUED,
                    f"queued behind run {adm.blocker} of job {job_id}",
                )
            else:
                outcome = (executor_pb2.RUN_DISPOSITION_STARTED, "started" + covered)
            if run.log is not None:  # At once: the run's trace on disk before it starts.
                run.log.write(accepted_line(request, outcome[1]), at_once=True)
            if lane.current is None:
                self._start_next(lane)
            self._gauges()
        self._report(to_report)
        return outcome

    def _known(self, run_id: int) -> tuple[int, str] | None:
        run = self._runs.get(run_id)
        if run is not None:
            d = (
                executor_pb2.RUN_DISPOSITION_QUEUED
                if run.phase == "queued"
                else executor_pb2.RUN_DISPOSITION_STARTED
            )
            return d, f"run {run_id} already accepted"
        e = self.ledger.find(run_id)
        if e is None:
            return None
        if e.kind is Kind.FENCED:
            return (
                executor_pb2.RUN_DISPOSITION_REJECTED,
                f"run {run_id} was fenced (GetRuns): never run here",
            )
        if e.kind is Kind.REFUSED:
            return e.disposition, f"run {run_id} already refused here: {e.message}"
        return (
            executor_pb2.RUN_DISPOSITION_STARTED,
            f"run {run_id} already ran here; its result is reported",
        )

    def _refuse(self, run_id: int, disposition: int, message: str) -> tuple[int, str]:
        self.ledger.refused(run_id, disposition, message)
        return disposition, message

    # ---- execution

    def _start_next(self, lane: Lane) -> None:
        """Starts the lane's next run (lock held)."""
        if lane.current is not None or not lane.queue:
            return
        run = lane.queue.popleft()
        lane.current = run
        run.phase = "running"
        self._running += 1
        spec = self._handlers[run.request.handler]
        if spec.is_async:
            loop = self._loop_provider()
            if loop is None or loop.is_closed():
                self._pool.submit(lambda: self._execute(run, spec, None))
            else:
                loop.call_soon_threadsafe(self._start_task, run, spec, loop)
        else:
            self._pool.submit(lambda: self._execute(run, spec, None))

    def _start_task(
        self, run: RunState, spec: HandlerSpec, loop: asyncio.AbstractEventLoop
    ) -> None:
        # The outer task always runs to its end (it reports); cancels go to the handler's own
        # task (run.task), which may be cancelled before it ever ran.
        run.extra["outer"] = loop.create_task(self._execute_async(run, spec))

    def _begin(self, run: RunState) -> JobContext:
        with self._mu:
            run.started = self._clock()
            t = timeout_seconds(run.request)
            if t > 0:
                run.deadline = run.started + t
                if self._runs.get(run.run_id) is run:
                    self._watch(run)
            self._gauges()
        run.write(f"run {run.run_id} started")
        return job_context(run)

    def _execute(self, run: RunState, spec: HandlerSpec, _unused: Any) -> None:
        ctx = self._begin(run)
        token = set_current(ctx)
        try:
            if run.cancellation.cancelled:
                raise Cancelled(run.cancellation.message)
            if spec.is_async:
                value = asyncio.run(spec.fn(ctx))
            else:
                value = spec.fn(ctx)
            outcome: tuple[bool, str] = (True, "" if value is None else str(value))
        except Cancelled as e:
            outcome = (False, f"cancelled by the handler{': ' + str(e) if str(e) else ''}")
        except BaseException as e:  # noqa: BLE001 - a handler's failure fails its run
            outcome = (False, f"handler raised: {type(e).__name__}: {e}")
        finally:
            reset_current(token)
        self._concluded(run, outcome)

    async def _execute_async(self, run: RunState, spec: HandlerSpec) -> None:
        ctx = self._begin(run)
        set_current(ctx)  # The task runs in its own copy of the context.
        try:
            if run.cancellation.cancelled:
                raise Cancelled(run.cancellation.message)
            inner = asyncio.ensure_future(spec.fn(ctx))
            with self._mu:
                run.task = inner
                cancelled = run.cancellation.cancelled
            if cancelled:
                inner.cancel()
            value = await inner
            outcome: tuple[bool, str] = (True, "" if value is None else str(value))
        except Cancelled as e:
            outcome = (False, f"cancelled by the handler{': ' + str(e) if str(e) else ''}")
        except asyncio.CancelledError:
            outcome = (False, "handler task cancelled")
        except Exception as e:  # noqa: BLE001 - a handler's failure fails its run
            outcome = (False, f"handler raised: {type(e).__name__}: {e}")
        await asyncio.get_running_loop().run_in_executor(None, self._concluded, run, outcome)

    def _concluded(self, run: RunState, outcome: tuple[bool, str]) -> None:
        ok, message = outcome
        final: dispatcher_pb2.RunResult | None = None
        with self._mu:
            if run.started is not None:
                self._metrics.observe_duration(self._clock() - run.started)
            if run.reported:
                run.write(
                    "handler returned after the run was reported; its result "
                    f"({'ok' if ok else 'fail'}) {message} is dropped"
                )
            elif run.cancellation.cancelled:
                final = self._cancelled_result(run)
            else:
                run.reported = True
                status = types_pb2.RUN_STATUS_SUCCEEDED if ok else types_pb2.RUN_STATUS_FAILED
                final = self._make(run, status, OK_CODE if ok else FAIL_CODE, message)
                run.write(ended_line(final))
        if run.log is not None:
            run.log.close()
        if final is not None:
            self._report([(run, final)])
        with self._cv:
            self._forget(run)
            lane = run.lane
            if lane is not None and lane.current is run:
                lane.current = None
                if lane.queue and not self._stopped:
                    self._start_next(lane)
                else:
                    self._lanes.drop_if_idle(lane)
            self._gauges()
            self._cv.notify_all()

    # ---- cancellation

    def _cancel(self, run: RunState, reason: str, message: str, now: float) -> bool:
        if not run.cancellation.cancel(reason, message):
            return False
        run.cancelled_at = now
        if self._runs.get(run.run_id) is run:
            self._watch(run)
        task, loop = run.task, self._loop_provider()
        if task is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)
        return True

    def _cancel_queued(
        self, run: RunState, reason: str, message: str, now: float
    ) -> tuple[RunState, dispatcher_pb2.RunResult]:
        if run.lane is not None:
            run.lane.unqueue(run)
        self._cancel(run, reason, message, now)
        result = self._cancelled_result(run)
        if run.log is not None:
            run.log.close()
        self._forget(run)
        return run, result

    def _cancelled_result(self, run: RunState) -> dispatcher_pb2.RunResult:
        run.reported = True
        c = run.cancellation
        if c.reason == CancelReason.KILLED:
            r = self._make(run, types_pb2.RUN_STATUS_KILLED, FAIL_CODE, c.message)
        elif c.reason == CancelReason.TIMED_OUT:
            r = self._make(run, types_pb2.RUN_STATUS_TIMED_OUT, TIMEOUT_CODE, c.message)
        elif c.reason == CancelReason.COVERED:
            r = self._make(run, types_pb2.RUN_STATUS_DISCARDED, FAIL_CODE, c.message)
        else:
            r = self._make(run, types_pb2.RUN_STATUS_FAILED, FAIL_CODE, "executor shut down")
        run.write(ended_line(r))
        return r

    def _make(
        self, run: RunState, status: int, code: int, message: str
    ) -> dispatcher_pb2.RunResult:
        r = dispatcher_pb2.RunResult(
            run_id=run.run_id,
            status=status,
            code=code,
            message=message,
            executor_address=self._address,
            result_key=run.request.result_key,
        )
        if run.started is not None:
            r.start_time.FromNanoseconds(int(run.started * 1e9))
        r.end_time.FromNanoseconds(int(self._clock() * 1e9))
        return r

    def _report(self, results: list[tuple[RunState, dispatcher_pb2.RunResult]]) -> None:
        for _run, r in results:
            self.ledger.ended(r.run_id, r.status, r.message)
            self._metrics.run_finished(STATUS_LABELS.get(r.status, "other"))
            self._sink(r)

    def _forget(self, run: RunState) -> None:
        if self._runs.get(run.run_id) is run:
            del self._runs[run.run_id]
            self._watched.pop(run.run_id, None)
            if run.phase == "running":
                self._running -= 1
            self.ledger.ended(run.run_id)

    def _gauges(self) -> None:
        self._metrics.set("running", self._running)
        self._metrics.set("queue_depth", len(self._runs) - self._running)

    def _watch(self, run: RunState) -> None:
        """The watchdog looks at `run` (a deadline or a cancel) from now on (lock held)."""
        self._watched[run.run_id] = run
        if self._watch_idle:
            self._watch_idle = False
            self._tick.notify_all()

    def _watchdog_loop(self) -> None:
        while True:
            to_report: list[tuple[RunState, dispatcher_pb2.RunResult]] = []
            with self._cv:
                if self._stopped and not self._runs:
                    return
                now = self._clock()
                for run in list(self._watched.values()):
                    if run.reported:
                        continue
                    if (
                        run.deadline is not None
                        and now >= run.deadline
                        and not run.cancellation.cancelled
                    ):
                        t = timeout_seconds(run.request)
                        msg = f"timed out after {t:g}s"
                        self._cancel(run, CancelReason.TIMED_OUT, msg, now)
                        run.write(f"run {run.run_id} {msg}; cancelling")
                    if (
                        run.cancelled_at is not None
                        and now >= run.cancelled_at + self._opt.cancel_grace
                    ):
                        to_report.append((run, self._cancelled_result(run)))
                        run.write(
                            f"handler did not return within {self._opt.cancel_grace:g}s of the "
                            "cancellation; result reported"
                        )
                if not self._watched and not self._stopped and not to_report:
                    # Nothing with a deadline or a cancel: sleep until something is watched.
                    self._watch_idle = True
                    self._tick.wait()
                    self._watch_idle = False
                else:
                    self._tick.wait(self._opt.watchdog_interval)
            self._report(to_report)

    # ---- queries

    def kill(self, run_id: int, reason: str) -> tuple[bool, str]:
        to_report = []
        with self._mu:
            run = self._runs.get(run_id)
            if run is None or run.reported:
                return False, f"run {run_id} is not running or queued here"
            message = f"killed: {reason}" if reason else "killed"
            now = self._clock()
            if run.phase == "queued":
                run.write(f"run {run_id} {message} while queued")
                to_report.append(self._cancel_queued(run, CancelReason.KILLED, message, now))
                outcome = (True, f"run {run_id} removed from the queue")
            elif self._cancel(run, CancelReason.KILLED, message, now):
                run.write(f"run {run_id} {message}; cancelling")
                outcome = (True, f"run {run_id} cancelled")
            else:
                outcome = (
                    True,
                    f"run {run_id} is already being cancelled ({run.cancellation.reason})",
                )
            self._gauges()
        self._report(to_report)
        return outcome

    def job_load(self, job_id: int) -> tuple[int, int]:
        with self._mu:
            runs = [r for r in self._runs.values() if r.request.job_id == job_id]
            running = sum(1 for r in runs if r.phase == "running")
            return running, len(runs) - running

    def snapshot(self) -> tuple[list[int], int, int]:
        with self._mu:
            jobs = sorted({r.request.job_id for r in self._runs.values() if r.phase == "running"})
            return jobs, self._running, len(self._runs) - self._running

    def is_active(self, run_id: int) -> bool:
        with self._mu:
            return run_id in self._runs

    def presence(self, run_ids: list[int], fence: bool) -> list[executor_pb2.RunPresenceState]:
        with self._mu:
            states = [self._presence(i) for i in run_ids]
        unseen = [
            i for i, s in enumerate(states) if s.presence == executor_pb2.RUN_PRESENCE_NOT_SEEN
        ]
        if not unseen:
            return states
        logged = {
            i: self._logs.logged_earlier(run_ids[i], self.ledger.largest_forgotten) for i in unseen
        }
        with self._mu:
            for i in unseen:
                rid = run_ids[i]
                states[i] = self._presence(rid)
                if states[i].presence != executor_pb2.RUN_PRESENCE_NOT_SEEN:
                    continue
                if logged[i]:
                    self.ledger.ended(rid, message="ran here before (its run log exists)")
                    states[i] = self._presence(rid)
                elif fence:
                    self.ledger.fence(rid)
                    states[i].presence = executor_pb2.RUN_PRESENCE_FENCED
        return states

    def _presence(self, run_id: int) -> executor_pb2.RunPresenceState:
        s = executor_pb2.RunPresenceState(run_id=run_id)
        run = self._runs.get(run_id)
        if run is not None and not run.reported:
            s.presence = (
                executor_pb2.RUN_PRESENCE_QUEUED
                if run.phase == "queued"
                else executor_pb2.RUN_PRESENCE_RUNNING
            )
            return s
        e = self.ledger.find(run_id)
        if e is not None:
            s.presence = {
                Kind.FENCED: executor_pb2.RUN_PRESENCE_FENCED,
                Kind.REFUSED: executor_pb2.RUN_PRESENCE_REFUSED,
                Kind.ENDED: executor_pb2.RUN_PRESENCE_ENDED,
            }[e.kind]
            s.status = e.status
            s.message = e.message
            return s
        if run is not None:
            s.presence = executor_pb2.RUN_PRESENCE_ENDED
            return s
        s.presence = executor_pb2.RUN_PRESENCE_NOT_SEEN
        return s
