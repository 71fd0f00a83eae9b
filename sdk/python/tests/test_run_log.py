from __future__ import annotations

import os
import stat
import time
from typing import Any

import pytest

from helpers import eventually

from jobwheel.log_segments import index_record
from jobwheel.private_dir import make_private_dir
from jobwheel.run_log import LogNotFound, LogRefused, RunLogStore


def store(tmp: Any, clock: Any = time.time) -> RunLogStore:
    s = RunLogStore(os.path.join(str(tmp), "logs"), clock)
    s.init()
    return s


def test_lines_pages_and_private_files(tmp_path: Any) -> None:
    s = store(tmp_path)
    log = s.create(42)
    for i in range(12):
        log.write(f"line {i}")
    log.write("two\nlines")
    log.close()
    p = s.read(42, 1, 5)
    assert (p.from_line, p.to_line, p.eof) == (1, 5, False)
    assert p.lines[0].endswith(" line 0") and p.lines[0][:4].isdigit()
    p = s.read(42, 11, 100)
    assert [ln.split(" ", 2)[2] for ln in p.lines] == ["line 10", "line 11", "two", "lines"]
    assert (p.to_line, p.eof) == (14, True)
    p = s.read(42, 20, 10)
    assert (p.lines, p.from_line, p.to_line, p.eof) == ([], 20, 19, True)
    [day] = [d for d in os.listdir(s.log_dir)]
    assert stat.S_IMODE(os.stat(os.path.join(s.log_dir, day)).st_mode) == 0o700
    # One segment (data and index) holds the runs' chunks: no file per run.
    assert sorted(os.listdir(os.path.join(s.log_dir, day))) == ["seg-1.idx", "seg-1.log"]
    for name in ("seg-1.idx", "seg-1.log"):
        assert stat.S_IMODE(os.stat(os.path.join(s.log_dir, day, name)).st_mode) == 0o600
    with pytest.raises(LogNotFound):
        s.read(43, 1, 10)
    # Interleaved runs each read back their own lines only, also after a restart.
    a, b = s.create(50), s.create(51)
    for i in range(3):
        a.write(f"a{i}", at_once=True)
        b.write(f"b{i}", at_once=True)
    s2 = store(tmp_path)
    for st in (s, s2):
        assert [ln.split(" ", 2)[2] for ln in st.read(50, 1, 10).lines] == ["a0", "a1", "a2"]
        assert [ln.split(" ", 2)[2] for ln in st.read(51, 1, 10).lines] == ["b0", "b1", "b2"]
    # The restarted store writes a segment of its own, never appending to the earlier one.
    c = s2.create(52)
    c.write("c")
    c.close()
    assert "seg-2.log" in os.listdir(os.path.join(s.log_dir, day))
    assert [ln.split(" ", 2)[2] for ln in store(tmp_path).read(52, 1, 10).lines] == ["c"]


def test_torn_and_garbage_records_are_not_served_and_a_refused_run_leaves_no_trace(
    tmp_path: Any,
) -> None:
    s = store(tmp_path)
    log = s.create(7)
    log.write("whole")
    log.close()
    [day] = os.listdir(s.log_dir)
    seg = os.path.join(s.log_dir, day, "seg-1")
    size = os.path.getsize(seg + ".log")
    with open(seg + ".log", "ab") as f:
        f.write(b"2026-01-01 00:00:00.000 half")  # A chunk whose index record never came.
    with open(seg + ".idx", "ab") as f:
        f.write(index_record(7, size + 100, 50))  # Points past the data file's end.
        garbage = bytearray(index_record(7, 0, size))
        garbage[8] ^= 1  # A flipped bit: the crc no longer matches.
        f.write(bytes(garbage))
        f.write(index_record(7, 0, size)[:20])  # Torn by a crash.
    for st in (s, store(tmp_path)):
        assert [ln.split(" ", 2)[2] for ln in st.read(7, 1, 10).lines] == ["whole"]
    s.create(8)  # Created, never written: no trace.
    with pytest.raises(LogNotFound):
        s.read(8, 1, 10)
    assert not store(tmp_path).logged_earlier(8, 0)


def test_symlinks_are_refused(tmp_path: Any) -> None:
    s = store(tmp_path)
    outside = os.path.join(str(tmp_path), "outside")
    os.mkdir(outside)
    with open(os.path.join(outside, "9.log"), "w") as f:
        f.write("secret\n")
    os.symlink(outside, os.path.join(s.log_dir, "2020-01-01"))
    with pytest.raises(LogRefused):
        s.read(9, 1, 10)
    day = os.path.join(s.log_dir, "2020-01-02")
    os.mkdir(day)
    os.symlink(os.path.join(outside, "9.log"), os.path.join(day, "10.log"))
    with pytest.raises(LogRefused):
        s.read(10, 1, 10)
    # A planted segment index that is a symlink is refused too, and never written through.
    with open(os.path.join(outside, "seg.idx"), "wb") as f:
        f.write(index_record(11, 0, 5))
    os.symlink(os.path.join(outside, "seg.idx"), os.path.join(day, "seg-1.idx"))
    with pytest.raises(LogRefused):
        s.read(11, 1, 10)
    size = os.path.getsize(os.path.join(outside, "seg.idx"))
    day3 = os.path.join(s.log_dir, "2020-01-03")
    os.mkdir(day3, 0o700)
    os.symlink(os.path.join(outside, "seg.idx"), os.path.join(day3, "seg-1.idx"))
    s._segments.append("2020-01-03", 12, b"x\n")  # Skips to a segment number of its own.
    assert os.path.getsize(os.path.join(outside, "seg.idx")) == size
    assert os.path.exists(os.path.join(day3, "seg-2.log"))
    link = os.path.join(str(tmp_path), "spool-link")
    os.symlink(outside, link)
    with pytest.raises(PermissionError, match="symlink"):
        make_private_dir(link)


def test_earlier_runs_are_found_on_disk_and_old_days_are_deleted(tmp_path: Any) -> None:
    now = [time.time()]
    s = store(tmp_path, clock=lambda: now[0])
    log = s.create(100)
    log.write("ran")
    log.close()
    # A log of the one-file-per-run layout of earlier SDK versions still counts.
    [day] = os.listdir(s.log_dir)
    with open(os.path.join(s.log_dir, day, "90.log"), "w") as f:
        f.write("2026-01-01 00:00:00.000 old\n")
    os.chmod(os.path.join(s.log_dir, day, "90.log"), 0o600)
    # A restarted process: run 100 is known by its segment chunk, ids above the earlier
    # maximum are never looked up on disk.
    s2 = store(tmp_path, clock=lambda: now[0])
    assert s2.earlier_max == 100
    assert s2.logged_earlier(90, 0)
    assert s2.read(90, 1, 10).lines[0].endswith(" old")
    assert s2.logged_earlier(100, 0)
    assert not s2.logged_earlier(99, 0)
    assert not s2.logged_earlier(101, 0)
    now[0] += 40 * 86400
    assert s2.cleanup(30) == 1
    assert not s2.logged_earlier(100, 0)


def test_lines_are_buffered_until_the_run_ends_or_the_flush_interval_passes(
    tmp_path: Any,
) -> None:
    s = store(tmp_path)

    def on_disk(run_id: int) -> list[str]:
        try:
            return [ln.split(" ", 2)[2] for ln in store(tmp_path).read(run_id, 1, 10).lines]
        except LogNotFound:
            return []

    log = s.create(60)
    log.write("accepted", at_once=True)
    log.write("working")
    # At once: the "accepted" line is on disk; the next one is served from the buffer.
    assert on_disk(60) == ["accepted"]
    assert [ln.split(" ", 2)[2] for ln in s.read(60, 1, 10).lines] == ["accepted", "working"]
    assert s.logged_earlier(60, 60)
    # The flusher writes it within the interval, without the run ending.
    eventually(lambda: on_disk(60) == ["accepted", "working"], timeout=2.0, what="flushed")
    log.write("done")
    log.close()
    assert on_disk(60) == ["accepted", "working", "done"]
    log.write("stray")  # After the end: written at once.
    assert on_disk(60)[-1] == "stray"
    # Closing the store writes what every open log still buffers.
    other = s.create(61)
    other.write("left open")
    s.close()
    assert on_disk(61) == ["left open"]
