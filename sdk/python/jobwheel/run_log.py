"""Per-run log files: `<log_dir>/<yyyy-mm-dd>/<run_id>.log` (the UTC day the run was accepted),
one line per entry, each starting with a UTC timestamp (`2026-01-02 03:04:05.678 `).

A run's file is created at its first line (a refused run leaves none), 0600 in 0700 folders,
opened with O_NOFOLLOW: a day folder or file that is a symlink is refused, never followed.
Lines are written as they are logged (one write(2) each), so a crashed process loses none it
logged. Runs of earlier processes are found by looking through the day folders, newest first.
Thread-safe.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import re
import shutil
import stat
import threading
from dataclasses import dataclass, field
from typing import Callable

from jobwheel.private_dir import make_private_dir, open_private_file

_DAY = re.compile(r"\A\d{4}-\d{2}-\d{2}\Z")
_RUN_FILE = re.compile(r"\A([1-9][0-9]{0,18})\.log\Z")
MAX_PAGE_BYTES = 1 << 20


class LogNotFound(Exception):
    """No log for the run here (NOT_FOUND)."""


class LogRefused(Exception):
    """A path that is a symlink or otherwise not ours (PERMISSION_DENIED)."""


def _timestamp(now: float) -> str:
    t = dt.datetime.fromtimestamp(now, dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def _day(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.timezone.utc).strftime("%Y-%m-%d")


@dataclass
class LogPage:
    lines: list[str] = field(default_factory=list)
    from_line: int = 1
    to_line: int = 0
    eof: bool = True


class RunLog:
    """One run's log; the file is opened at the first line."""

    def __init__(self, store: RunLogStore, run_id: int, day: str) -> None:
        self._store = store
        self.run_id = run_id
        self.day = day
        self._mu = threading.Lock()
        self._fd: int | None = None
        self._closed = False

    def write(self, text: str) -> None:
        now = self._store.clock()
        stamp = _timestamp(now)
        lines = str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
        data = "".join(f"{stamp} {line}\n" for line in lines).encode("utf-8", "replace")
        with self._mu:
            try:
                if self._fd is None:
                    self._fd = self._store.open_for_append(self.run_id, self.day)
                os.write(self._fd, data)
            except OSError as e:
                self._store.logger_error(self.run_id, e)
            if self._closed:
                # A stray line after the end: written at once, no descriptor kept.
                self._close_fd()

    def close(self) -> None:
        with self._mu:
            self._closed = True
            self._close_fd()

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class RunLogStore:
    def __init__(self, log_dir: str, clock: Callable[[], float]) -> None:
        self.log_dir = log_dir
        self.clock = clock
        self._mu = threading.Lock()
        self._days: dict[int, str] = {}  # Runs of this process → their day folder.
        self._earlier_max = 0  # The largest run id an earlier process logged.
        self._error: Callable[[int, OSError], None] | None = None

    def init(self) -> None:
        self.log_dir = make_private_dir(self.log_dir)
        best = 0
        for day in self._day_folders():
            try:
                names = os.listdir(os.path.join(self.log_dir, day))
            except OSError:
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
        day = _day(self.clock())
        with self._mu:
            self._days[run_id] = day
        return RunLog(self, run_id, day)

    def forget(self, run_id: int) -> None:
        """A run refused after its log was made: the log is dropped (it wrote nothing)."""
        with self._mu:
            self._days.pop(run_id, None)

    def open_for_append(self, run_id: int, day: str) -> int:
        day_dir = os.path.join(self.log_dir, day)
        try:
            os.mkdir(day_dir, 0o700)
        except FileExistsError:
            pass
        if stat.S_ISLNK(os.lstat(day_dir).st_mode):
            raise OSError(errno.ELOOP, f"{day_dir} is a symlink")
        return open_private_file(
            os.path.join(day_dir, f"{int(run_id)}.log"),
            os.O_WRONLY | os.O_CREAT | os.O_APPEND,
        )

    def logged_earlier(self, run_id: int, largest_forgotten: int) -> bool:
        """Whether a run log of this id exists on disk (it ran here before) - looked up only
        for ids up to the largest an earlier process logged or this one forgot."""
        if run_id > max(self._earlier_max, largest_forgotten):
            return False
        return self._find(run_id) is not None

    def read(self, run_id: int, from_line: int, max_lines: int) -> LogPage:
        path = self._find(run_id)
        if path is None:
            raise LogNotFound(f"run {run_id}: no log on this executor")
        try:
            fd = open_private_file(path, os.O_RDONLY)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise LogRefused(f"run {run_id}: its log is a symlink; refused") from None
            raise LogNotFound(f"run {run_id}: no log on this executor") from None
        with os.fdopen(fd, "rb") as f:
            data = f.read()
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

    def _find(self, run_id: int) -> str | None:
        with self._mu:
            day = self._days.get(run_id)
        days = [day] if day is not None else []
        days += [d for d in self._day_folders() if d != day]
        for d in days:
            day_dir = os.path.join(self.log_dir, d)
            try:
                if stat.S_ISLNK(os.lstat(day_dir).st_mode):
                    raise LogRefused(f"run {run_id}: day folder {d} is a symlink; refused")
                p = os.path.join(day_dir, f"{int(run_id)}.log")
                os.lstat(p)
                return p
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
                    shutil.rmtree(p, ignore_errors=True)
                    removed += 1
        return removed
