"""Block strategies: each job has a lane (its queue, at most one run running).

SERIAL_EXECUTION (and unspecified) queues a run behind a busy job, DISCARD_LATER refuses it,
COVER_EARLY takes the job's runs off its lane (to be cancelled "covered by" the new run) and
starts the new run on a fresh lane. Not thread-safe: the RunManager's lock guards it.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from jobwheel.stubs import types_pb2


class Lane:
    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.queue: deque[Any] = deque()
        self.current: Any = None

    @property
    def busy(self) -> bool:
        return self.current is not None or bool(self.queue)

    def unqueue(self, run: Any) -> None:
        try:
            self.queue.remove(run)
        except ValueError:
            pass


class AdmitKind(enum.Enum):
    START = "start"
    QUEUE = "queue"
    DISCARD = "discard"


@dataclass
class Admission:
    kind: AdmitKind = AdmitKind.START
    blocker: int = 0  # The run the job is busy with (running, or first queued).
    covered_queued: list[Any] = field(default_factory=list)
    covered_running: Any = None
    lane: Lane | None = None


class Lanes:
    def __init__(self) -> None:
        self._lanes: dict[int, Lane] = {}

    def admit(self, job_id: int, strategy: int) -> Admission:
        a = Admission()
        lane = self._lanes.get(job_id)
        busy = lane is not None and lane.busy
        if busy:
            assert lane is not None
            blocker = lane.current if lane.current is not None else lane.queue[0]
            a.blocker = blocker.run_id
        if busy and strategy == types_pb2.BLOCK_STRATEGY_DISCARD_LATER:
            a.kind = AdmitKind.DISCARD
            return a
        if busy and strategy == types_pb2.BLOCK_STRATEGY_COVER_EARLY:
            assert lane is not None
            a.covered_queued = list(lane.queue)
            lane.queue.clear()
            a.covered_running = lane.current
            del self._lanes[job_id]
            lane = None
        if lane is None:
            lane = Lane(job_id)
            self._lanes[job_id] = lane
        a.kind = AdmitKind.QUEUE if lane.busy else AdmitKind.START
        a.lane = lane
        return a

    def drop_if_idle(self, lane: Lane) -> None:
        if self._lanes.get(lane.job_id) is lane and not lane.busy:
            del self._lanes[lane.job_id]

    def __len__(self) -> int:
        return len(self._lanes)
