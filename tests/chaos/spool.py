#!/usr/bin/env python3
"""Reads an executor's result spool (sdk/internal/result_spool.cc) as the SDK does at start.

The spool is an append-only journal: <spool_dir>/journal-<20-digit n>.log segments, each a
sequence of records

  u32 payload length (LE), u32 FNV-1a 32 of (kind byte + payload) (LE), u8 kind, payload

kind 1 (put): payload is a serialized jobwheel.v1.RunResult (run_id = field 1, status = field 2);
kind 2 (remove): payload is the run id, 8 bytes LE. Segments are replayed in number order; a
record that is torn or fails its checksum ends its segment (at the end of the newest segment
it is a put cut short by a crash, which never returned). What is put and not removed is live:
a result not yet acknowledged by a dispatcher. Files of the earlier one-file-per-run format
(<run_id>.result) and segments set aside as unreadable (*.bad) count as left in the spool too.

  spool.py DIR...   prints the number of results left in those spool directories
"""
import glob
import os
import re
import struct
import sys

SEGMENT_RE = re.compile(r"^journal-(\d+)\.log$")
PUT, REMOVE = 1, 2


def fnv1a(data):
    h = 2166136261
    for c in data:
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def _varint(buf, pos):
    v = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, pos
        shift += 7


def parse_run_result(payload):
    """(run_id, status number) of a serialized RunResult; fields other than 1 and 2 skipped."""
    run_id = status = 0
    pos = 0
    try:
        while pos < len(payload):
            key, pos = _varint(payload, pos)
            field, wire = key >> 3, key & 7
            if wire == 0:
                v, pos = _varint(payload, pos)
                if field == 1:
                    run_id = v if v < 1 << 63 else v - (1 << 64)
                elif field == 2:
                    status = v
            elif wire == 2:
                n, pos = _varint(payload, pos)
                pos += n
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                break
    except IndexError:
        pass
    return run_id, status


def live_results(spool_dir):
    """{run_id: status} of the results left in spool_dir, and a list of other leftovers
    (legacy files, unreadable segments, records torn before the newest segment's end)."""
    live = {}
    other = []
    segments = []
    for name in os.listdir(spool_dir) if os.path.isdir(spool_dir) else []:
        m = SEGMENT_RE.match(name)
        if m:
            segments.append((int(m.group(1)), name))
        elif name.endswith(".bad"):
            other.append(os.path.join(spool_dir, name))
    for path in glob.glob(os.path.join(spool_dir, "*.result")):
        other.append(path)
    segments.sort()
    for i, (_, name) in enumerate(segments):
        path = os.path.join(spool_dir, name)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        pos = 0
        while pos < len(data):
            if len(data) - pos < 9:
                break
            length, check = struct.unpack_from("<II", data, pos)
            if len(data) - pos - 9 < length or fnv1a(data[pos + 8:pos + 9 + length]) != check:
                break
            kind = data[pos + 8]
            payload = data[pos + 9:pos + 9 + length]
            if kind == PUT:
                run_id, status = parse_run_result(payload)
                if run_id > 0:
                    live[run_id] = status
            elif kind == REMOVE and length == 8:
                live.pop(struct.unpack("<q", payload)[0], None)
            pos += 9 + length
        if pos < len(data) and i + 1 < len(segments):
            other.append("%s (unreadable from byte %d of %d)" % (path, pos, len(data)))
    return live, other


def main(argv):
    n = 0
    for d in argv[1:]:
        live, other = live_results(d)
        n += len(live) + len(other)
    print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
