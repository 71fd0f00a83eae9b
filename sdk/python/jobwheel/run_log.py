"""Per-run logs: one timestamped line per entry (`2026-01-02 03:04:05.678 `), kept in the
append-only segments of the day folder of the UTC day the run was accepted
(`<log_dir>/<yyyy-mm-dd>/seg-<n>.log|idx`, log_segments.py).

A run's lines are buffered and written as one chunk when it ends, at 64 KiB or within
200 ms (RunLog); its "accepted" line is written at once. Nothing is written before the first
line, so a refused run leaves no trace. The chunks of the recent runs of this process are
remembered; other runs (earlier processes, or forgotten) are found through the day folders'
segment indexes, newest day first, and so are the one-file-per-run logs `<day>/<run_id>.log`
that earlier versions of this SDK wrote. Files are 0600 in 0700 folders, opened with
O_NOFOLLOW: a day folder or file that is a symlink is refused, never followed. Thread-safe.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import re
import shutil
import stat
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from jobwheel.log_segments import Chunk, LogSegments, SegmentRefused
from jobwheel.private_dir import make_private_dir, open_private_file

_DAY = re.compile(r"\A\d{4}-\d{2}-\d{2}\Z")
_RUN_FILE = re.compile(r"\A([1-9][0-9]{0,18})\.log\Z")
MAX_PAGE_BYTES = 1 << 20
REMEMBERED_RUNS = 20000  # Runs whose chunks are kept in memory (the rest are looked up).
FLUSH_INTERVAL_S = 0.2  # Buffered lines are written at the latest this long after...
FLUSH_BYTES = 64 << 10  # ... or as soon as this many are buffered.


class LogNotFound(Exception):
    """No log for the run here (NOT_FOUND)."""


class LogRefused(Exception):
    """A path that is a symlink or otherwise not ours (PERMISSION_DENIED)."""


_stamp_cache: tuple[int, str] = (-1, "")


def _timestamp(now: float) -> str:
    global _stamp_cache
    sec = int(now)
    cached_sec, prefix = _stamp_cache
    if cached_sec != sec:
        prefix = time.strftime("%Y-%m-%d %H:%M:%S.", time.gmtime(sec))
        _stamp_cache = (sec, prefix)
    return f"{prefix}{int((now - sec) * 1000):03d}"


_day_cache: tuple[int, str] = (-1, "")


def _day(now: float) -> str:
    global _day_cache
    n = int(now // 86400)  # Unix time has 86,400 s a UTC day.
    if _day_cache[0] != n:
        _day_cache = (n, dt.datetime.fromtimestamp(now, dt.timezone.utc).strftime("%Y-%m-%d"))
    return _day_cache[1]


@dataclass
class LogPage:
    lines: list[str] = field(default_factory=list)
    from_line: int = 1
    to_line: int = 0
    eof: bool = True


class RunLog:
    """One run's log; nothing is written before its first line. Lines are buffered and
    written as one chunk when the run ends (close), at FLUSH_BYTES, or by the store's flusher
    at most FLUSH_INTERVAL_S after they were logged (the C++ SDK's rule); a line written
    `at_once` goes out at once with whatever is buffered before it (the "accepted" line: the
    run's trace on disk before its handler starts). After close every line is written at
    once."""

    def __init__(self, store: RunLogStore, run_id: int, day: str) -> None:
        self._store = store
        self.run_id = run_id
        self.day = day
        self._mu = threading.Lock()
        self._buf: list[bytes] = []
        self._buf_bytes = 0
        self._closed = False

    def write(self, text: str, at_once: bool = False) -> None:
        stamp = _timestamp(self._store.clock())
        text = str(text)
        if "\r" in text or "\n" in text:
            lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            data = "".join(f"{stamp} {line}\n" for line in lines)
        else:
            data = f"{stamp} {text}\n"
        raw = data.encode("utf-8", "replace")
        with self._mu:
            first = not self._buf
            self._buf.append(raw)
            self._buf_bytes += len(raw)
            if at_once or self._closed or self._buf_bytes >= FLUSH_BYTES:
                self._flush_locked()
                return
        if first:
            self._store.buffered(self)

    def flush(self) -> None:
        with self._mu:
            self._flush_locked()

    def close(self) -> None:
        """The run ended: its buffered lines are written (a later stray line at once)."""
        with self._mu:
            self._closed = True
            self._flush_locked()

    def _flush_locked(self) -> None:
        if self._buf:
            data = b"".join(self._buf)
            self._buf.clear()
            self._buf_bytes = 0
            self._store.append(self.run_id, self.day, data)

    def snapshot(self) -> tuple[list[Chunk], bytes]:
        """The chunks written and the lines still buffered, taken together (no flush moves
        lines in between)."""
        with self._mu:
            return self._store.chunks_of(self.run_id), b"".join(self._buf)


class RunLogStore:
    def __init__(self, log_dir: str, clock: Callable[[], float]) -> None:
        self.log_dir = log_dir
        self.clock = clock
        self._mu = threading.Lock()
        # Runs of this process → (day folder, chunks written): the most recent ones.
        # Tuples of tuples of ints: nothing here for the garbage collector to go through.
        self._recent: OrderedDict[int, tuple[str, tuple[Chunk, ...]]] = OrderedDict()
        self._earlier_max = 0  # The largest run id an earlier process logged.
        self._error: Callable[[int, OSError], None] | None = None
        self._segments = LogSegments(log_dir)
        # Logs with buffered lines (for the flusher and for reads), and the flusher.
        self._buffered: dict[int, RunLog] = {}
        self._flush_cv = threading.Condition(self._mu)
        self._flusher: threading.Thread | None = None
        self._flusher_idle = False  # Waiting for a buffered log (not for the next tick).
        self._closed = False

    def init(self) -> None:
        self.log_dir = make_private_dir(self.log_dir)
        self._segments = LogSegments(self.log_dir)
        best = 0
        for day in self._day_folders():
            try:
                best = max(best, self._segments.max_run_id(day))
                names = os.listdir(os.path.join(self.log_dir, day))
            except (OSError, SegmentRefused):
                continue
            for n in names:
                m = _RUN_FILE.match(n)
                if m:
                    best = max(best, int(m.group(1)))
        self._earlier_max = best

    @property
    def earlier_max(self) -> int:
        return self._earlier_max

    def on_error(self, fn: Callable[[int, OSError], None]) -> None:
        self._error = fn

    def logger_error(self, run_id: int, e: OSError) -> None:
        if self._error is not None:
            self._error(run_id, e)

    def create(self, run_id: int) -> RunLog:
        return RunLog(self, run_id, _day(self.clock()))

    def forget(self, run_id: int) -> None:
        """A run refused after its log was made: the log is dropped (it wrote nothing)."""
        with self._mu:
            self._recent.pop(run_id, None)

    def append(self, run_id: int, day: str, data: bytes) -> None:
        # Under the store's lock: a run's chunks are remembered in the order they were written.
        with self._mu:
            try:
                chunk = self._segments.append(day, run_id, data)
            except (OSError, SegmentRefused) as e:
                error = e if isinstance(e, OSError) else OSError(errno.EPERM, str(e))
            else:
                known = self._recent.get(run_id)
                if known is not None and known[0] == day:
                    self._recent[run_id] = (day, known[1] + (chunk,))
                else:
                    self._recent[run_id] = (day, (chunk,))
                    while len(self._recent) > REMEMBERED_RUNS:
                        self._recent.popitem(last=False)
                return
        self.logger_error(run_id, error)

    def buffered(self, log: RunLog) -> None:
        """`log` got its first buffered line: the flusher writes it within FLUSH_INTERVAL_S."""
        with self._mu:
            if self._closed:
                flush_now = True
            else:
                flush_now = False
                self._buffered[log.run_id] = log
                if self._flusher is None:
                    self._flusher = threading.Thread(
                        target=self._flush_loop, name="jobwheel-runlog-flush", daemon=True
                    )
                    self._flusher.start()
                elif self._flusher_idle:
                    self._flusher_idle = False
                    self._flush_cv.notify()
        if flush_now:
            log.flush()

    def _flush_loop(self) -> None:
        with self._mu:
            while not self._closed:
                if not self._buffered:
                    self._flusher_idle = True  # Woken by the next buffered log.
                    self._flush_cv.wait()
                    self._flusher_idle = False
                    continue
                self._flush_cv.wait(FLUSH_INTERVAL_S)  # Not woken before: one flush a tick.
                logs = list(self._buffered.values())
                self._buffered.clear()
                self._mu.release()
                try:
                    for log in logs:
                        log.flush()
                finally:
                    self._mu.acquire()

    def chunks_of(self, run_id: int) -> list[Chunk]:
        with self._mu:
            known = self._recent.get(run_id)
            return list(known[1]) if known is not None else []

    def close(self) -> None:
        """Writes every buffered line and closes the segments."""
        with self._mu:
            self._closed = True
            logs = list(self._buffered.values())
            self._buffered.clear()
            self._flush_cv.notify_all()
        for log in logs:
            log.flush()
        self._segments.close()

    def logged_earlier(self, run_id: int, largest_forgotten: int) -> bool:
        """Whether a run log of this id exists on disk (it ran here before) - looked up only
        for ids up to the largest an earlier process logged or this one forgot."""
        if run_id > max(self._earlier_max, largest_forgotten):
            return False
        return self._find(run_id) is not None

    def read(self, run_id: int, from_line: int, max_lines: int) -> LogPage:
        with self._mu:
            open_log = self._buffered.get(run_id)
        found: tuple[str, list[Chunk] | None] | None = None
        pending = b""
        if open_log is not None:
            chunks, pending = open_log.snapshot()
            found = (open_log.day, chunks)
        else:
            found = self._find(run_id)
        if found is None or (found[1] == [] and not pending):
            raise LogNotFound(f"run {run_id}: no log on this executor")
        try:
            data = (self._read_found(run_id, found) if found[1] != [] else b"") + pending
        except SegmentRefused:
            raise LogRefused(f"run {run_id}: its log is a symlink; refused") from None
        except FileNotFoundError:
            raise LogNotFound(f"run {run_id}: no log on this executor") from None
        page = LogPage(from_line=from_line, to_line=from_line - 1)
        all_lines = data.split(b"\n")
        complete = all_lines[:-1]  # A line without its newline is still being written.
        size = 0
        i = from_line - 1
        while i < len(complete) and len(page.lines) < max_lines:
            line = complete[i].decode("utf-8", "replace")
            size += len(line) + 1
            if page.lines and size > MAX_PAGE_BYTES:
                break
            page.lines.append(line)
            i += 1
        page.to_line = from_line - 1 + len(page.lines)
        page.eof = i >= len(complete)
        return page

    def _read_found(self, run_id: int, found: tuple[str, list[Chunk] | None]) -> bytes:
        day, chunks = found
        if chunks is not None:
            return self._segments.read_chunks(day, chunks)
        path = os.path.join(self.log_dir, day, f"{int(run_id)}.log")
        try:
            fd = open_private_file(path, os.O_RDONLY)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise SegmentRefused(str(run_id)) from None
            raise FileNotFoundError(path) from None
        with os.fdopen(fd, "rb") as f:
            return f.read()

    def _find(self, run_id: int) -> tuple[str, list[Chunk] | None] | None:
        """Where run_id's log is: (day, its chunks), or (day, None) for a one-file log."""
        with self._mu:
            known = self._recent.get(run_id)
            if known is not None:
                return known[0], list(known[1])
        for d in self._day_folders():
            day_dir = os.path.join(self.log_dir, d)
            try:
                if stat.S_ISLNK(os.lstat(day_dir).st_mode):
                    raise LogRefused(f"run {run_id}: day folder {d} is a symlink; refused")
                chunks = self._segments.chunks(d, run_id)
            except FileNotFoundError:
                continue
            except SegmentRefused as e:
                raise LogRefused(f"run {run_id}: {e}") from None
            if chunks:
                return d, chunks
            try:
                os.lstat(os.path.join(day_dir, f"{int(run_id)}.log"))
                return d, None
            except FileNotFoundError:
                continue
        return None

    def _day_folders(self) -> list[str]:
        try:
            names = os.listdir(self.log_dir)
        except OSError:
            return []
        return sorted((n for n in names if _DAY.match(n)), reverse=True)

    def cleanup(self, retention_days: int) -> int:
        """Deletes day folders older than retention_days (<= 0 keeps all); returns how many."""
        if retention_days <= 0:
            return 0
        cutoff = _day(self.clock() - retention_days * 86400)
        removed = 0
        for d in self._day_folders():
            if d < cutoff:
                p = os.path.join(self.log_dir, d)
                if not os.path.islink(p):
                    self._segments.drop_day(d)
                    with self._mu:
                        for rid in [r for r, (day, _) in self._recent.items() if day == d]:
                            del self._recent[rid]
                    shutil.rmtree(p, ignore_errors=True)
                    removed += 1
        return removed
