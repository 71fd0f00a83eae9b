"""What an executor remembers of run ids it no longer holds (the RunManager holds queued and
running runs): runs that ended here, runs it refused (DISCARDED or REJECTED: a repeated call
gets the same answer and the run never runs) and run ids fenced by GetRuns (refused for good).

Both memories are bounded, least recently used dropped: `recent_runs` ended or refused runs and
`fenced_runs` fences, so a flood of short runs never pushes a fence out. The largest run id
forgotten to make room is kept (`largest_forgotten`): a run of this process up to it may have
ended here without being remembered, and its run log on disk tells. Fences are not kept across
a restart: a trigger sent before the restart cannot arrive after it. Thread-safe.
"""

from __future__ import annotations

import enum
import threading
from collections import OrderedDict
from dataclasses import dataclass

from jobwheel.stubs import executor_pb2, types_pb2


class Kind(enum.Enum):
    ENDED = "ended"
    REFUSED = "refused"
    FENCED = "fenced"


@dataclass
class Entry:
    kind: Kind
    # ENDED: the terminal status (UNSPECIFIED while being made, or known only by its log).
    status: int = types_pb2.RUN_STATUS_UNSPECIFIED
    # REFUSED: the answer it was given (DISCARDED or REJECTED).
    disposition: int = executor_pb2.RUN_DISPOSITION_UNSPECIFIED
    message: str = ""


class RunLedger:
    def __init__(self, recent_runs: int = 10000, fenced_runs: int = 100000) -> None:
        self._mu = threading.Lock()
        self._recent: OrderedDict[int, Entry] = OrderedDict()
        self._fenced: OrderedDict[int, bool] = OrderedDict()
        self._recent_cap = max(1, recent_runs)
        self._fenced_cap = max(1, fenced_runs)
        self._largest_forgotten = 0

    def ended(
        self, run_id: int, status: int = types_pb2.RUN_STATUS_UNSPECIFIED, message: str = ""
    ) -> None:
        """The run ended here. A known status is kept over UNSPECIFIED; a refused or fenced
        entry never becomes an ended one."""
        with self._mu:
            if run_id in self._fenced:
                return
            old = self._recent.get(run_id)
            if old is not None and old.kind is Kind.REFUSED:
                self._recent.move_to_end(run_id)
                return
            if old is not None and status == types_pb2.RUN_STATUS_UNSPECIFIED:
                self._recent.move_to_end(run_id)
                return
            self._remember(run_id, Entry(Kind.ENDED, status=status, message=message))

    def refused(self, run_id: int, disposition: int, message: str) -> None:
        status = (
            types_pb2.RUN_STATUS_DISCARDED
            if disposition == executor_pb2.RUN_DISPOSITION_DISCARDED
            else types_pb2.RUN_STATUS_FAILED
        )
        with self._mu:
            self._remember(
                run_id,
                Entry(Kind.REFUSED, status=status, disposition=disposition, message=message),
            )

    def fence(self, run_id: int) -> None:
        with self._mu:
            self._fenced[run_id] = True
            self._fenced.move_to_end(run_id)
            while len(self._fenced) > self._fenced_cap:
                self._fenced.popitem(last=False)

    def find(self, run_id: int) -> Entry | None:
        with self._mu:
            if run_id in self._fenced:
                self._fenced.move_to_end(run_id)
                return Entry(Kind.FENCED)
            e = self._recent.get(run_id)
            if e is not None:
                self._recent.move_to_end(run_id)
                return Entry(e.kind, e.status, e.disposition, e.message)
            return None

    @property
    def largest_forgotten(self) -> int:
        with self._mu:
            return self._largest_forgotten

    def __len__(self) -> int:
        with self._mu:
            return len(self._recent)

    def _remember(self, run_id: int, entry: Entry) -> None:
        self._recent[run_id] = entry
        self._recent.move_to_end(run_id)
        while len(self._recent) > self._recent_cap:
            old_id, _ = self._recent.popitem(last=False)
            self._largest_forgotten = max(self._largest_forgotten, old_id)
