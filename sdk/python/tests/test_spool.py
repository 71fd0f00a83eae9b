from __future__ import annotations

import os
import stat
import threading

import pytest

from helpers import eventually

from jobwheel.metrics import ExecutorMetrics
from jobwheel.reporter import ResultReporter
from jobwheel.spool import ResultSpool
from jobwheel.stubs import dispatcher_pb2, types_pb2


def result(run_id: int, key: bytes = b"K" * 32) -> dispatcher_pb2.RunResult:
    return dispatcher_pb2.RunResult(
        run_id=run_id, status=types_pb2.RUN_STATUS_SUCCEEDED, message=f"r{run_id}", result_key=key
    )


def test_journal_survives_a_restart_with_keys_and_tombstones(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "spool")
    s = ResultSpool(d)
    s.init()
    assert s.load_all() == []
    for i in (1, 2, 3):
        s.append(result(i, key=bytes([i]) * 32))
    s.remove(2)
    s.sync()
    # A second process on the same directory is refused while the first holds it.
    with pytest.raises(RuntimeError, match="in use by another executor process"):
        ResultSpool(d).init()
    s._lock_fd, fd = -1, s._lock_fd
    os.close(fd)  # What a killed process leaves: its lock is gone, its journal is not.
    s2 = ResultSpool(d)
    s2.init()
    loaded = s2.load_all()
    assert [r.run_id for r in loaded] == [1, 3]
    assert loaded[1].result_key == b"\x03" * 32
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    for n in os.listdir(d):
        if n == "lock":
            continue
        assert stat.S_IMODE(os.stat(os.path.join(d, n)).st_mode) == 0o600
    # Compacted: one segment left.
    assert len([n for n in os.listdir(d) if n.startswith("journal-")]) == 1
    s2.close()


def test_a_torn_record_is_ignored(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "spool")
    s = ResultSpool(d)
    s.init()
    s.load_all()
    s.append(result(7))
    s.append(result(8))
    s.close()  # Releases the directory for the next process.
    seg = [n for n in os.listdir(d) if n.startswith("journal-")][0]
    path = os.path.join(d, seg)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 3)
    s2 = ResultSpool(d)
    s2.init()
    assert [r.run_id for r in s2.load_all()] == [7]


def test_segments_roll_and_settled_ones_are_deleted(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "spool")
    s = ResultSpool(d, segment_bytes=200)
    s.init()
    s.load_all()
    for i in range(1, 21):
        s.append(result(i))
    assert len([n for n in os.listdir(d) if n.startswith("journal-")]) > 2
    for i in range(1, 21):
        s.remove(i)
    assert len([n for n in os.listdir(d) if n.startswith("journal-")]) == 1
    s.close()
    s2 = ResultSpool(d)
    s2.init()
    assert s2.load_all() == []


class FlakyDispatcher:
    def __init__(self) -> None:
        self.up = False
        self.received: list[int] = []
        self.refuse: set[int] = set()
        self.mu = threading.Lock()

    def __call__(self, batch: list[dispatcher_pb2.RunResult]) -> tuple[list[int], list[int]]:
        with self.mu:
            if not self.up:
                raise ConnectionError("dispatcher down")
            assert all(r.result_key for r in batch)
            self.received += [r.run_id for r in batch]
            return (
                [r.run_id for r in batch if r.run_id not in self.refuse],
                [r.run_id for r in batch if r.run_id in self.refuse],
            )


def test_results_stay_spooled_while_the_dispatcher_is_down_and_replay_after_restart(
    tmp_path: object,
) -> None:
    d = os.path.join(str(tmp_path), "spool")
    disp = FlakyDispatcher()
    m = ExecutorMetrics()
    spool = ResultSpool(d)
    spool.init()
    rep = ResultReporter(spool, disp, m, initial_backoff=0.01, max_backoff=0.05)
    rep.start()
    rep.submit(result(1))
    rep.submit(result(2))
    assert rep.flush(0.3) == 2
    rep.shutdown()
    spool.close()
    assert m.spool_size == 2

    # A new process: the spool is replayed once the dispatcher is up; a refused one is dropped.
    disp.up = True
    disp.refuse = {2}
    spool2 = ResultSpool(d)
    spool2.init()
    m2 = ExecutorMetrics()
    rep2 = ResultReporter(spool2, disp, m2, initial_backoff=0.01, max_backoff=0.05)
    rep2.start()
    eventually(lambda: rep2.pending() == 0, what="spool drained")
    rep2.shutdown()
    spool2.close()
    assert sorted(disp.received) == [1, 2]
    assert m2.results_refused == 1
    spool3 = ResultSpool(d)
    spool3.init()
    assert spool3.load_all() == []


def test_results_close_together_go_in_one_sync_and_one_call(tmp_path: object) -> None:
    class CountingSpool(ResultSpool):
        syncs = 0

        def sync(self) -> None:
            CountingSpool.syncs += 1
            super().sync()

    d = os.path.join(str(tmp_path), "spool")
    disp = FlakyDispatcher()
    disp.up = True
    calls: list[list[int]] = []

    def send(batch: list[dispatcher_pb2.RunResult]) -> tuple[list[int], list[int]]:
        calls.append([r.run_id for r in batch])
        return disp(batch)

    spool = CountingSpool(d)
    spool.init()
    rep = ResultReporter(spool, send, ExecutorMetrics(), linger=0.5)
    rep.start()
    for i in range(1, 21):
        rep.submit(result(i))
    eventually(lambda: rep.pending() == 0, what="results acknowledged")
    rep.shutdown()
    spool.close()
    # The 20 results were submitted well within the linger: one batch, one fdatasync before
    # it (the shutdown syncs once more), and every one acknowledged and tombstoned.
    assert calls == [list(range(1, 21))]
    assert CountingSpool.syncs == 2
    again = ResultSpool(d)
    again.init()
    assert again.load_all() == []
