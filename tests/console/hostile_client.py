"""One hostile client against a running console, and a well-behaved one beside it.

Used by check_hostile.sh. Loopback accepts any 127/8 source address, so the attacker
connects from 127.0.0.1 and the well-behaved client from 127.0.0.2: the console tells them
apart as two clients. Each phase prints what it saw and exits 1 when the console failed it.

  forge CONSOLE                 paths with a newline and ESC (log forging attempts)
  siege CONSOLE PID TOKEN_FILE  200 slow connections and gzip bombs while /healthz and a
                                signed-in ListJobs are timed every 200 ms; memory of PID
  flood CONSOLE TOKEN_FILE SECONDS
                                junk tokens from the attacker while a fresh token is used
                                by the other client
"""

from __future__ import annotations

import http.client
import secrets
import socket
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field

ATTACKER = "127.0.0.1"
USER = "127.0.0.2"
BOMB_SOURCE = "127.0.0.3"
LIST_JOBS = "/jobwheel.v1.JobAdminService/ListJobs"


def split(address: str) -> tuple[str, int]:
    host, port = address.rsplit(":", 1)
    return host, int(port)


def connection(console: str, source: str, timeout: float = 5.0) -> http.client.HTTPConnection:
    host, port = split(console)
    return http.client.HTTPConnection(host, port, timeout=timeout, source_address=(source, 0))


def call(
    console: str, source: str, method: str, path: str, token: str = ""
) -> tuple[int, bytes, float]:
    """One request on a new connection: (status, body, seconds); status 0 on failure."""
    start = time.monotonic()
    conn = connection(console, source, timeout=5.0)
    try:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        body = b"{}" if method == "POST" else None
        conn.request(method, path, body=body, headers=headers)
        res = conn.getresponse()
        data = res.read()
        return res.status, data, time.monotonic() - start
    except OSError:
        return 0, b"", time.monotonic() - start
    finally:
        conn.close()


def memory_kib(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                out[name] = int(value.split()[0])
    return out


def forge(console: str) -> int:
    """Requests whose paths carry a newline and ESC; the log must keep them on one line."""
    for method, path in (
        ("POST", "/jobwheel.v1.JobAdminService/Nope%0aFORGED-LINE%1b[31m"),
        ("GET", "/%0aFORGED-PAGE%1b[2J"),
    ):
        status, _, _ = call(console, "127.0.0.4", method, path)
        print(f"forge: {method} {path} -> {status}")
        if status == 0:
            print("forge: FAILED: no answer")
            return 1
    return 0


def gzip_bomb(size: int = 100 << 20) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip wrapper.
    chunk = b"\0" * (1 << 20)
    parts = [z.compress(chunk) for _ in range(size // len(chunk))]
    parts.append(z.flush())
    return b"".join(parts)


def send_bomb(console: str, source: str, bomb: bytes) -> int:
    """Headers and the whole body at once, as an attacker would: the answer's status."""
    host, port = split(console)
    s = socket.create_connection((host, port), timeout=5, source_address=(source, 0))
    head = (
        f"POST {LIST_JOBS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n\r\n"
    ).encode()
    try:
        s.sendall(head + bomb)
    except OSError:
        pass  # Refused before the body was read: the server may close while we send.
    try:
        answer = s.recv(4096)
    except OSError:
        answer = b""
    finally:
        s.close()
    if answer.startswith(b"HTTP/1.1 "):
        return int(answer[9:12])
    return 0


@dataclass
class Slowloris:
    """Up to `count` connections from the attacker, each sending a byte a second and
    reopened (at most once a second) when the console closes it."""

    console: str
    count: int
    stop: threading.Event = field(default_factory=threading.Event)
    opened: int = 0
    most_open: int = 0

    def run(self) -> None:
        host, port = split(self.console)
        slots: list[socket.socket | None] = [None] * self.count
        while not self.stop.is_set():
            tick = time.monotonic()
            open_now = 0
            for i, s in enumerate(slots):
                if s is None:
                    try:
                        s = socket.create_connection(
                            (host, port), timeout=1, source_address=(ATTACKER, 0)
                        )
                        s.sendall(b"POST " + LIST_JOBS.encode() + b" HTTP/1.1\r\nHost: ")
                        s.setblocking(False)
                        self.opened += 1
                    except OSError:
                        s = None
                else:
                    try:
                        s.send(b"x")
                    except OSError:
                        s.close()
                        s = None
                slots[i] = s
                open_now += s is not None
            self.most_open = max(self.most_open, open_now)
            self.stop.wait(max(0.0, 1.0 - (time.monotonic() - tick)))
        for s in slots:
            if s is not None:
                s.close()


def siege(console: str, pid: int, token_file: str, seconds: float = 10.0) -> int:
    token = open(token_file, encoding="ascii").read().strip()
    before = memory_kib(pid)
    print(f"siege: console memory before: {before}")
    loris = Slowloris(console, 200)
    loris_thread = threading.Thread(target=loris.run, daemon=True)
    loris_thread.start()
    bomb = gzip_bomb()
    print(f"siege: gzip bomb of {len(bomb)} bytes inflating to 100 MiB")
    bomb_status: list[int] = []

    def bombs() -> None:
        for source in (BOMB_SOURCE, BOMB_SOURCE, BOMB_SOURCE, BOMB_SOURCE, ATTACKER):
            bomb_status.append(send_bomb(console, source, bomb))

    bombers = [threading.Thread(target=bombs, daemon=True) for _ in range(4)]
    for b in bombers:
        b.start()

    failures: list[str] = []
    slowest = 0.0
    probes = 0
    peak = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tick = time.monotonic()
        for method, path, tok in (("GET", "/healthz", ""), ("POST", LIST_JOBS, token)):
            status, body, took = call(console, USER, method, path, tok)
            probes += 1
            slowest = max(slowest, took)
            if status != 200 or took > 1.0:
                failures.append(f"{method} {path}: {status} in {took:.2f}s {body[:80]!r}")
        peak = max(peak, memory_kib(pid).get("VmRSS", 0))
        time.sleep(max(0.0, 0.2 - (time.monotonic() - tick)))
    loris.stop.set()
    loris_thread.join()
    for b in bombers:
        b.join()
    after = memory_kib(pid)
    print(
        f"siege: {probes} probes from {USER}, slowest {slowest:.3f}s; slow connections: "
        f"{loris.opened} opened, at most {loris.most_open} open at once; bomb answers "
        f"{sorted(set(bomb_status))}; memory after: {after}, highest VmRSS seen {peak} kB"
    )
    rc = 0
    if failures:
        print(f"siege: FAILED: {len(failures)} probes late or refused, e.g. {failures[:3]}")
        rc = 1
    if after.get("VmHWM", 0) >= 100 * 1024:
        print(f"siege: FAILED: console peak memory {after['VmHWM']} kB >= 100 MB")
        rc = 1
    if not bomb_status or any(s not in (415, 503) for s in bomb_status):
        print(f"siege: FAILED: gzip bombs answered {bomb_status}, want 415 (or 503)")
        rc = 1
    if 415 not in bomb_status:
        print("siege: FAILED: no gzip bomb was answered 415")
        rc = 1
    if loris.most_open < 10:
        print("siege: FAILED: the slow connections did not get in at all")
        rc = 1
    return rc


def flood(console: str, fresh_token_file: str, seconds: float) -> int:
    fresh = open(fresh_token_file, encoding="ascii").read().strip()
    stop = threading.Event()
    answers: dict[int, int] = {}
    lock = threading.Lock()

    def junk() -> None:
        conn = connection(console, ATTACKER)
        while not stop.is_set():
            try:
                conn.request(
                    "POST",
                    LIST_JOBS,
                    body=b"{}",
                    headers={
                        "Content-Type": "application/json",
                        "Authorization": "Bearer jw_" + secrets.token_hex(32),
                    },
                )
                res = conn.getresponse()
                res.read()
                status = res.status
                if res.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = connection(console, ATTACKER)
            except OSError:
                status = 0
                conn.close()
                conn = connection(console, ATTACKER)
            with lock:
                answers[status] = answers.get(status, 0) + 1
            time.sleep(0.001)
        conn.close()

    threads = [threading.Thread(target=junk, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(min(10.0, seconds / 3))
    status, body, took = call(console, USER, "POST", LIST_JOBS, fresh)
    print(f"flood: the fresh token from {USER} mid-flood: {status} in {took:.2f}s")
    rest = seconds - min(10.0, seconds / 3)
    time.sleep(max(0.0, rest))
    stop.set()
    for t in threads:
        t.join()
    print(f"flood: junk answers by status: {dict(sorted(answers.items()))}")
    rc = 0
    if status != 200:
        print(f"flood: FAILED: the fresh token was refused: {status} {body[:200]!r}")
        rc = 1
    if answers.get(200, 0):
        print("flood: FAILED: a junk token was accepted")
        rc = 1
    if sum(answers.values()) < 100:
        print("flood: FAILED: fewer than 100 junk requests were made")
        rc = 1
    return rc


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "forge":
        return forge(argv[1])
    if len(argv) >= 4 and argv[0] == "siege":
        return siege(argv[1], int(argv[2]), argv[3])
    if len(argv) >= 4 and argv[0] == "flood":
        return flood(argv[1], argv[2], float(argv[3]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
