"""The append-only segment files the run logs live in (run_log.py): one file per run would
cost a file creation per run, which on a busy ext4 costs more CPU than the rest of the run.

In each day folder `<log_dir>/<yyyy-mm-dd>/`, `seg-<n>.log` holds chunks (the whole lines of
one write of one run) back to back and `seg-<n>.idx` one 32-byte record per chunk, written
after the chunk (little endian: int64 run_id, int64 offset, int64 length, uint32 zero, uint32
crc32 of the first 28 bytes). A reader trusts only whole index records whose crc matches and
whose chunk lies inside the data file, so it never serves a torn chunk or half a line. A
process appends only to segments it created (O_CREAT|O_EXCL on the next free number), and
starts a new one at `segment_bytes`. Files are 0600, opened with O_NOFOLLOW; a day folder
that is a symlink is refused. Nothing is fsync'd (as before: a crash loses no line already
written, the kernel has it). Per segment the lowest and highest run id are kept (exact for
own segments, read once and extended for others), so a lookup reads only segments that may
hold the run. Thread-safe.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import struct
import threading
import zlib
from dataclasses import dataclass
from typing import NamedTuple

from jobwheel.private_dir import open_private_file

INDEX = struct.Struct("<qqqII")
_CHECKED = struct.Struct("<qqqI")  # The bytes the crc covers.
_SEG = re.compile(r"\Aseg-([0-9]{1,9})\.idx\Z")
SEGMENT_BYTES = 64 << 20
_NO_RUN = 1 << 62  # The low end of an empty segment's run id range.


class SegmentRefused(Exception):
    """A day folder or segment file that is a symlink or not a plain file (PERMISSION_DENIED)."""


class Chunk(NamedTuple):
    """Where a chunk is (a tuple of ints: the garbage collector does not track it)."""

    segment: int
    offset: int
    length: int


@dataclass
class _Info:
    index_bytes: int = 0  # Whole records accounted for in lo/hi.
    lo: int = 0
    hi: int = 0


@dataclass
class _Writer:
    n: int
    data: int
    index: int
    data_bytes: int = 0


def index_record(run_id: int, offset: int, length: int) -> bytes:
    head = _CHECKED.pack(run_id, offset, length, 0)
    return head + struct.pack("<I", zlib.crc32(head))


def parse_index(data: bytes) -> list[tuple[int, int, int]]:
    """(run_id, offset, length) of the valid chunk records of an index file's bytes."""
    out = []
    for rec in range(0, len(data) - INDEX.size + 1, INDEX.size):
        run_id, offset, length, seg, crc = INDEX.unpack_from(data, rec)
        if run_id > 0 and length > 0 and offset >= 0 and seg == 0:
            if zlib.crc32(data[rec : rec + _CHECKED.size]) == crc:
                out.append((run_id, offset, length))
    return out


class LogSegments:
    def __init__(self, log_dir: str, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.log_dir = log_dir
        self._segment_bytes = segment_bytes
        self._mu = threading.Lock()
        self._writers: dict[str, _Writer] = {}
        self._info: dict[tuple[str, int], _Info] = {}

    # ---- writing

    def append(self, day: str, run_id: int, data: bytes) -> Chunk:
        """Appends one chunk of run_id's log in `day` (OSError if it cannot)."""
        with self._mu:
            w = self._writers.get(day)
            if w is not None and w.data_bytes >= self._segment_bytes:
                self._close_writer(day)
                w = None
            if w is None:
                w = self._open_writer(day)
            offset = w.data_bytes
            n = os.write(w.data, data)
            w.data_bytes += n
            if n != len(data):  # A full disk: the chunk is not indexed, the segment is done.
                w.data_bytes = self._segment_bytes
                raise OSError(errno.ENOSPC, f"{day}/seg-{w.n}.log: short write")
            os.write(w.index, index_record(run_id, offset, n))
            info = self._info[(day, w.n)]
            info.index_bytes += INDEX.size
            info.lo, info.hi = min(info.lo, run_id), max(info.hi, run_id)
            return Chunk(w.n, offset, n)

    def _open_writer(self, day: str) -> _Writer:
        day_dir = self.day_dir(day, create=True)
        n = max([0, *self._segments(day_dir)]) + 1
        while True:
            try:
                data = open_private_file(
                    os.path.join(day_dir, f"seg-{n}.log"),
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND,
                )
            except FileExistsError:
                n += 1
                continue
            try:
                index = open_private_file(
                    os.path.join(day_dir, f"seg-{n}.idx"),
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND,
                )
            except FileExistsError:
                os.close(data)
                n += 1
                continue
            w = _Writer(n, data, index)
            self._writers[day] = w
            self._info[(day, n)] = _Info(lo=_NO_RUN, hi=0)
            return w

    def _close_writer(self, day: str) -> None:
        w = self._writers.pop(day, None)
        if w is not None:
            os.close(w.data)
            os.close(w.index)

    def close(self) -> None:
        with self._mu:
            for day in list(self._writers):
                self._close_writer(day)

    def drop_day(self, day: str) -> None:
        """The day folder was removed: its writer and what was known of it go."""
        with self._mu:
            self._close_writer(day)
            for key in [k for k in self._info if k[0] == day]:
                del self._info[key]

    # ---- reading

    def day_dir(self, day: str, create: bool = False) -> str:
        path = os.path.join(self.log_dir, day)
        if create:
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise SegmentRefused(f"day folder {day} is a symlink or not a folder; refused")
        return path

    @staticmethod
    def _segments(day_dir: str) -> list[int]:
        out = []
        for name in os.listdir(day_dir):
            m = _SEG.match(name)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def _read_file(self, day_dir: str, name: str, offset: int = 0, length: int = -1) -> bytes:
        try:
            fd = open_private_file(os.path.join(day_dir, name), os.O_RDONLY)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise SegmentRefused(f"{name} is a symlink; refused") from None
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SegmentRefused(f"{name} is not a plain file; refused")
            if length < 0:
                length = os.fstat(fd).st_size - offset
            return os.pread(fd, max(0, length), offset)
        finally:
            os.close(fd)

    def _refresh(self, day: str, day_dir: str, n: int) -> _Info:
        """The segment's run id range, extended by index records written since last time."""
        with self._mu:
            info = self._info.get((day, n))
            own = day in self._writers and self._writers[day].n == n
            if info is not None and own:
                return _Info(info.index_bytes, info.lo, info.hi)
            start = info.index_bytes if info is not None else 0
        try:
            data = self._read_file(day_dir, f"seg-{n}.idx", start)
        except FileNotFoundError:
            return _Info()
        whole = len(data) - len(data) % INDEX.size
        ids = [r[0] for r in parse_index(data[:whole])]
        with self._mu:
            info = self._info.setdefault((day, n), _Info(lo=_NO_RUN, hi=0))
            if info.index_bytes == start:
                info.index_bytes += whole
                if ids:
                    info.lo, info.hi = min(info.lo, *ids), max(info.hi, *ids)
            return _Info(info.index_bytes, info.lo, info.hi)

    def chunks(self, day: str, run_id: int) -> list[Chunk]:
        """run_id's chunks in `day`, in the order written, each inside its data file."""
        try:
            day_dir = self.day_dir(day)
        except FileNotFoundError:
            return []
        out: list[Chunk] = []
        for n in self._segments(day_dir):
            info = self._refresh(day, day_dir, n)
            if info.index_bytes == 0 or not info.lo <= run_id <= info.hi:
                continue
            index = self._read_file(day_dir, f"seg-{n}.idx", 0, info.index_bytes)
            mine = [r for r in parse_index(index) if r[0] == run_id]
            if not mine:
                continue
            size = os.lstat(os.path.join(day_dir, f"seg-{n}.log")).st_size
            out += [Chunk(n, off, ln) for _, off, ln in mine if off + ln <= size]
        return out

    def read_chunks(self, day: str, chunks: list[Chunk]) -> bytes:
        day_dir = self.day_dir(day)
        return b"".join(
            self._read_file(day_dir, f"seg-{c.segment}.log", c.offset, c.length) for c in chunks
        )

    def max_run_id(self, day: str) -> int:
        """The largest run id with a chunk in `day` (0 when none)."""
        day_dir = self.day_dir(day)
        return max([0, *(self._refresh(day, day_dir, n).hi for n in self._segments(day_dir))])
