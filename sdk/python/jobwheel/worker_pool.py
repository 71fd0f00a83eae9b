"""The bounded thread pool sync handlers run on (RunManager)."""

from __future__ import annotations

import queue
import threading
from typing import Callable


class WorkerPool:
    """At most `max_threads` daemon threads (a handler that ignores cancellation cannot hold
    the process at exit); threads start as work arrives and stay."""

    def __init__(self, max_threads: int) -> None:
        self._q: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._mu = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._max = max(1, max_threads)

    def submit(self, fn: Callable[[], None]) -> None:
        with self._mu:
            if self._idle == 0 and len(self._threads) < self._max:
                t = threading.Thread(target=self._loop, name="jobwheel-run", daemon=True)
                self._threads.append(t)
                self._idle += 1
                t.start()
            self._idle -= 1
        self._q.put(fn)

    def _loop(self) -> None:
        while True:
            fn = self._q.get()
            if fn is None:
                return
            try:
                fn()
            finally:
                with self._mu:
                    self._idle += 1

    @property
    def threads(self) -> int:
        with self._mu:
            return len(self._threads)
