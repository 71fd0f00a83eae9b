"""What a handler sees of its run: JobContext, its per-run logger and cooperative cancellation.

The context of the run being executed is also in a contextvar (`current_context()`), so code
deep in a handler (sync or async) can reach the run's logger without passing it along.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any, Callable

TRIGGER_NAMES = {
    0: "unspecified",
    1: "cron",
    2: "fix_rate",
    3: "manual",
    4: "misfire",
    5: "retry",
    6: "parent",
}


class Cancelled(Exception):
    """Raised by a handler that stops because its run was cancelled (ctx.cancelled). The run
    ends with the status decided when it was cancelled (KILLED, TIMED_OUT, DISCARDED or
    FAILED "executor shut down")."""


class CancelReason:
    NONE = ""
    KILLED = "killed"
    TIMED_OUT = "timed_out"
    COVERED = "covered"
    SHUTDOWN = "shutdown"


class Cancellation:
    """A run's cancellation: the first cancel decides the reason and message. Thread-safe."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._mu = threading.Lock()
        self.reason = CancelReason.NONE
        self.message = ""
        self._callbacks: list[Callable[[], None]] = []

    def cancel(self, reason: str, message: str) -> bool:
        with self._mu:
            if self._event.is_set():
                return False
            self.reason = reason
            self.message = message
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb()
        return True

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None) -> bool:
        return self._event.wait(timeout)

    def on_cancel(self, cb: Callable[[], None]) -> None:
        with self._mu:
            if not self._event.is_set():
                self._callbacks.append(cb)
                return
        cb()


class RunLogger:
    """The run's logger: each call is a line of the run's log (printf-style like logging)."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write

    def _emit(self, level: str, msg: object, args: tuple[Any, ...]) -> None:
        text = str(msg)
        if args:
            try:
                text = text % args
            except (TypeError, ValueError):
                text = f"{text} {args!r}"
        self._write(text if level == "INFO" else f"{level} {text}")

    def debug(self, msg: object, *args: Any) -> None:
        self._emit("DEBUG", msg, args)

    def info(self, msg: object, *args: Any) -> None:
        self._emit("INFO", msg, args)

    def warning(self, msg: object, *args: Any) -> None:
        self._emit("WARNING", msg, args)

    warn = warning

    def error(self, msg: object, *args: Any) -> None:
        self._emit("ERROR", msg, args)

    def exception(self, msg: object, *args: Any) -> None:
        import traceback

        self._emit("ERROR", f"{msg}\n{traceback.format_exc().rstrip()}", args)


class JobContext:
    """One run as its handler sees it. Construct one yourself to unit-test a handler."""

    Cancelled = Cancelled

    def __init__(
        self,
        *,
        run_id: int = 0,
        job_id: int = 0,
        fire_id: int = 0,
        handler: str = "",
        param: str = "",
        shard_index: int = 0,
        shard_total: int = 0,
        attempt: int = 0,
        trigger: str = "manual",
        scheduled_time: float | None = None,
        deadline: float | None = None,
        log: RunLogger | None = None,
        cancellation: Cancellation | None = None,
    ) -> None:
        self.run_id = run_id
        self.job_id = job_id
        self.fire_id = fire_id
        self.handler = handler
        self.param = param
        self.shard_index = shard_index
        self.shard_total = shard_total
        self.attempt = attempt
        self.trigger = trigger
        self.scheduled_time = scheduled_time
        # Unix seconds (start + timeout), None without a timeout.
        self.deadline = deadline
        self.log = log if log is not None else RunLogger(lambda _line: None)
        self._cancellation = cancellation if cancellation is not None else Cancellation()

    @property
    def cancelled(self) -> bool:
        return self._cancellation.cancelled

    @property
    def cancel_reason(self) -> str:
        """'killed', 'timed_out', 'covered', 'shutdown', or '' while not cancelled."""
        return self._cancellation.reason

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Blocks up to `timeout` seconds (None: forever); True once cancelled. For sync
        handlers: a sleep that ends early when the run is cancelled."""
        return self._cancellation.wait(timeout)

    async def wait_cancelled_async(self, timeout: float | None = None) -> bool:
        """The asyncio form of wait_cancelled."""
        if self.cancelled:
            return True
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()

        def wake() -> None:
            loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(True))

        self._cancellation.on_cancel(wake)
        try:
            return await asyncio.wait_for(asyncio.shield(fut), timeout)
        except asyncio.TimeoutError:
            return self.cancelled

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise Cancelled(self._cancellation.message)

    def remaining(self) -> float | None:
        """Seconds left before the deadline (None without a timeout)."""
        return None if self.deadline is None else max(0.0, self.deadline - time.time())


_current: contextvars.ContextVar[JobContext | None] = contextvars.ContextVar(
    "jobwheel_job_context", default=None
)


def current_context() -> JobContext | None:
    """The JobContext of the run this code executes for, or None outside a run."""
    return _current.get()


def set_current(ctx: JobContext | None) -> contextvars.Token[JobContext | None]:
    return _current.set(ctx)


def reset_current(token: contextvars.Token[JobContext | None]) -> None:
    _current.reset(token)
