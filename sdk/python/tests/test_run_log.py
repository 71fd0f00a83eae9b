from __future__ import annotations

import os
import stat
import time
from typing import Any

import pytest

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
    f = os.path.join(s.log_dir, day, "42.log")
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    with pytest.raises(LogNotFound):
        s.read(43, 1, 10)


def test_a_partial_line_is_not_served_and_a_refused_run_leaves_no_file(tmp_path: Any) -> None:
    s = store(tmp_path)
    log = s.create(7)
    log.write("whole")
    [day] = os.listdir(s.log_dir)
    with open(os.path.join(s.log_dir, day, "7.log"), "ab") as f:
        f.write(b"2026-01-01 00:00:00.000 half")
    assert len(s.read(7, 1, 10).lines) == 1
    s.create(8)  # Created, never written: no file, no trace.
    with pytest.raises(LogNotFound):
        s.read(8, 1, 10)


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
    # A restarted process: run 100 is known by its file, ids above the earlier maximum are
    # never looked up on disk.
    s2 = store(tmp_path, clock=lambda: now[0])
    assert s2.earlier_max == 100
    assert s2.logged_earlier(100, 0)
    assert not s2.logged_earlier(99, 0)
    assert not s2.logged_earlier(101, 0)
    now[0] += 40 * 86400
    assert s2.cleanup(30) == 1
    assert not s2.logged_earlier(100, 0)
