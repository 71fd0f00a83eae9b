"""The result spool: every RunResult is on disk until a dispatcher acknowledges it.

An append-only journal `<spool_dir>/journal-<n>.log` of records
`uint32 length | uint32 crc32(body) | body` (little endian), where the body is `R` + a
serialized RunResult (with its result key) or `T` + a little-endian int64 run id (a tombstone:
acknowledged or refused for good). Segments roll over at 8 MiB and are deleted once every
result in them is settled. At start the journal is read back (a record torn by a crash ends its
segment; a segment corrupt before its end is renamed `*.bad`), compacted into a new segment and
resent. `sync()` makes everything appended durable in one fdatasync (outside the lock: appends
never wait for the disk). The directory is private
(0700, files 0600). Thread-safe.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import struct
import threading
import zlib

from jobwheel.private_dir import make_private_dir, open_private_file
from jobwheel.stubs import dispatcher_pb2

log = logging.getLogger("jobwheel")

_SEGMENT = re.compile(r"\Ajournal-([0-9]{1,12})\.log\Z")
_HEADER = struct.Struct("<II")
_RUN_ID = struct.Struct("<q")
MAX_RECORD = 4 << 20


def _record(body: bytes) -> bytes:
    return _HEADER.pack(len(body), zlib.crc32(body)) + body


class ResultSpool:
    def __init__(self, spool_dir: str, segment_bytes: int = 8 << 20) -> None:
        self.spool_dir = spool_dir
        self._segment_bytes = segment_bytes
        self._mu = threading.Lock()
        self._fd: int | None = None
        self._seg = 0  # Number of the segment appended to.
        self._seg_size = 0
        self._live: dict[int, set[int]] = {}  # Segment → run ids with an unsettled result.
        self._where: dict[int, int] = {}  # Run id → segment of its latest result.
        self._dirty = False
        self._syncing = False  # A sync() is in its fdatasync (outside the lock).
        self._synced = threading.Condition(self._mu)
        self._lock_fd = -1

    def init(self) -> None:
        """Makes the private directory and takes it for this process: a second executor
        process on the same spool directory is refused (RuntimeError), since both would
        resend and compact each other's results."""
        self.spool_dir = make_private_dir(self.spool_dir)
        self._lock_fd = open_private_file(
            os.path.join(self.spool_dir, "lock"), os.O_RDWR | os.O_CREAT
        )
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = -1
            raise RuntimeError(
                f"spool_dir: {self.spool_dir} is in use by another executor process "
                "(one spool directory per executor process)"
            ) from None

    def _segments(self) -> list[int]:
        out = []
        for n in os.listdir(self.spool_dir):
            m = _SEGMENT.match(n)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def _path(self, n: int) -> str:
        return os.path.join(self.spool_dir, f"journal-{n}.log")

    def load_all(self) -> list[dispatcher_pb2.RunResult]:
        """The unsettled results of earlier processes; compacts them into a new segment."""
        results: dict[int, dispatcher_pb2.RunResult] = {}
        segments = self._segments()
        for n in segments:
            with open(self._path(n), "rb") as f:
                data = f.read()
            pos, bad = 0, False
            while pos + _HEADER.size <= len(data):
                length, crc = _HEADER.unpack_from(data, pos)
                body = data[pos + _HEADER.size : pos + _HEADER.size + length]
                if length == 0 or length > MAX_RECORD or len(body) < length:
                    bad = pos + _HEADER.size + length < len(data) and length <= MAX_RECORD
                    break
                if zlib.crc32(body) != crc:
                    bad = pos + _HEADER.size + length < len(data)
                    break
                pos += _HEADER.size + length
                kind, rest = body[:1], body[1:]
                if kind == b"R":
                    r = dispatcher_pb2.RunResult()
                    try:
                        r.ParseFromString(rest)
                    except Exception:  # noqa: BLE001 - a damaged record is skipped
                        continue
                    if r.run_id > 0:
                        results[r.run_id] = r
                elif kind == b"T" and len(rest) == _RUN_ID.size:
                    results.pop(_RUN_ID.unpack(rest)[0], None)
            if bad:
                log.warning(
                    "result spool: %s is corrupt before its end; renamed .bad", self._path(n)
                )
                os.replace(self._path(n), self._path(n) + ".bad")
        with self._mu:
            self._seg = (segments[-1] + 1) if segments else 1
            self._open_segment()
            for r in results.values():
                self._append_locked(_record(b"R" + r.SerializeToString()), r.run_id)
            self._sync_locked()
        for n in segments:
            if os.path.exists(self._path(n)):
                os.unlink(self._path(n))
        return sorted(results.values(), key=lambda r: r.run_id)

    def append(self, result: dispatcher_pb2.RunResult) -> None:
        with self._mu:
            if self._fd is None:
                self._seg = max([0, *self._segments()]) + 1
                self._open_segment()
            self._append_locked(_record(b"R" + result.SerializeToString()), result.run_id)

    def remove(self, run_id: int) -> None:
        self.remove_many([run_id])

    def remove_many(self, run_ids: list[int]) -> None:
        """The results are settled (acknowledged or refused): tombstones, in one write; a
        segment with no unsettled result left (and not the current one) is deleted."""
        with self._mu:
            if self._fd is None:
                return
            settled = [(rid, self._where.pop(rid)) for rid in run_ids if rid in self._where]
            if not settled:
                return
            bodies = [b"T" + _RUN_ID.pack(rid) for rid, _ in settled]
            self._append_locked(b"".join(_record(b) for b in bodies))
            for rid, seg in settled:
                live = self._live.get(seg)
                if live is None:
                    continue
                live.discard(rid)
                if not live and seg != self._seg:
                    del self._live[seg]
                    try:
                        os.unlink(self._path(seg))
                    except FileNotFoundError:
                        pass

    def sync(self) -> None:
        """Makes everything appended so far durable. The fdatasync runs outside the lock (on a
        duplicate of the descriptor), so appends never wait for the disk; a segment that
        rolls over meanwhile was synced whole by the roll-over."""
        with self._synced:
            while self._syncing:  # Another sync may have taken our appends: wait for it.
                self._synced.wait()
            if self._fd is None or not self._dirty:
                return
            self._dirty = False
            self._syncing = True
            fd = os.dup(self._fd)
        failed = True
        try:
            os.fdatasync(fd)
            failed = False
        finally:
            os.close(fd)
            with self._synced:
                if failed:
                    self._dirty = True  # Not known durable: the next sync tries again.
                self._syncing = False
                self._synced.notify_all()

    def pending(self) -> int:
        with self._mu:
            return len(self._where)

    def close(self) -> None:
        with self._mu:
            if self._fd is not None:
                self._sync_locked()
                os.close(self._fd)
                self._fd = None
            if self._lock_fd >= 0:
                os.close(self._lock_fd)  # Releases the flock.
                self._lock_fd = -1

    def _open_segment(self) -> None:
        self._fd = open_private_file(
            self._path(self._seg), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_EXCL
        )
        self._seg_size = 0
        self._live.setdefault(self._seg, set())

    def _append_locked(self, records: bytes, run_id: int | None = None) -> None:
        """Appends whole records (header + body each); run_id: the one result they hold."""
        assert self._fd is not None
        if self._seg_size >= self._segment_bytes:
            self._sync_locked()
            os.close(self._fd)
            old = self._seg
            self._seg += 1
            self._open_segment()
            if not self._live.get(old):
                self._live.pop(old, None)
                os.unlink(self._path(old))
        os.write(self._fd, records)
        self._seg_size += len(records)
        self._dirty = True
        if run_id is not None:
            old_seg = self._where.get(run_id)
            if old_seg is not None and old_seg in self._live:
                self._live[old_seg].discard(run_id)
            self._where[run_id] = self._seg
            self._live[self._seg].add(run_id)

    def _sync_locked(self) -> None:
        if self._fd is not None and self._dirty:
            os.fdatasync(self._fd)
            self._dirty = False
