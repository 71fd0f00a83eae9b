#!/usr/bin/python3
"""An XXL-JOB-protocol executor for jobwheel's tests and demo, written from the protocol.

It speaks the executor side of XXL-JOB's HTTP protocol (docs/xxl-job.md): it serves
/run /kill /log /beat /idleBeat, registers with the admin every --register_interval seconds
(/api/registry; /api/registryRemove at a graceful stop) and calls back results
(/api/callback), keeping unacknowledged callbacks in its own spool file and retrying them
every --callback_retry seconds. Replies use the 2.x envelope (ReturnT: code, msg, content)
or the 3.3+ one (Response: code, msg, data), chosen by --envelope.

Handlers (the job's executorHandler):
  echo      logs its param and succeeds
  sleep     sleeps param milliseconds, stopping early when killed (interruptible)
  stubborn  sleeps param milliseconds and ignores kills (a handler that ignores interrupts)
  fail      fails (handleCode 500) with its param as message
  code      ends with handleCode int(param)
  shard     logs broadcastIndex/broadcastTotal and succeeds
Every handler start and end is appended to --executions_file as
"start handler=H job=J fire=0 run=R attempt=0" / "end ... ok=0|1 cancelled=0|1".
With --arrivals_file, every /run that arrives appends "logId arrival_us" (wall clock, not
synced: the bench's record of when each trigger reached the executor).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional

HANDLERS = ("echo", "sleep", "stubborn", "fail", "code", "shard")


@dataclass
class Trigger:
    job_id: int
    handler: str
    params: str
    block: str
    timeout_s: int
    log_id: int
    log_date_time: int
    glue_type: str
    broadcast_index: int
    broadcast_total: int


@dataclass
class JobThread:
    job_id: int
    queue: "queue.Queue[Optional[Trigger]]" = field(default_factory=queue.Queue)
    queued_ids: List[int] = field(default_factory=list)
    running: Optional[Trigger] = None
    stop: threading.Event = field(default_factory=threading.Event)
    killed_reason: str = ""


class Executor:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lock = threading.Lock()
        self.jobs: Dict[int, JobThread] = {}
        self.callbacks: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self.stopping = threading.Event()
        os.makedirs(args.log_dir, exist_ok=True)
        os.makedirs(args.spool_dir, exist_ok=True)
        self.spool_path = os.path.join(args.spool_dir, "callbacks.jsonl")
        self.exec_lock = threading.Lock()
        self.arrivals = open(args.arrivals_file, "a", buffering=1) if args.arrivals_file else None

    # ---- bookkeeping -------------------------------------------------------------------
    def record(self, line: str) -> None:
        if not self.args.executions_file:
            return
        with self.exec_lock:
            with open(self.args.executions_file, "a") as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())

    def log_path(self, log_id: int, log_date_time: int) -> str:
        day = time.strftime("%Y-%m-%d", time.localtime(log_date_time / 1000.0))
        return os.path.join(self.args.log_dir, day, "%d.log" % log_id)

    def log(self, t: Trigger, text: str) -> None:
        path = self.log_path(t.log_id, t.log_date_time)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with open(path, "a") as f:
            f.write("%s [%s] %s\n" % (stamp, t.handler, text))

    def envelope(self, code: int, msg: Optional[str], payload: Any = None) -> Dict[str, Any]:
        if self.args.envelope == "2":
            out: Dict[str, Any] = {"code": code}
            if msg is not None:
                out["msg"] = msg
            if payload is not None:
                out["content"] = payload
            return out
        return {
            "code": code,
            "msg": msg if msg is not None else "Success",
            "data": payload,
        }

    def arrived(self, body: Dict[str, Any], at_us: int) -> None:
        if self.arrivals is None:
            return
        with self.exec_lock:
            self.arrivals.write("%s %d\n" % (body.get("logId", 0), at_us))

    # ---- runs --------------------------------------------------------------------------
    def run(self, body: Dict[str, Any]) -> Dict[str, Any]:
        t = Trigger(
            job_id=int(body.get("jobId", 0)),
            handler=str(body.get("executorHandler", "")),
            params=str(body.get("executorParams", "")),
            block=str(body.get("executorBlockStrategy", "SERIAL_EXECUTION")),
            timeout_s=int(body.get("executorTimeout", 0)),
            log_id=int(body.get("logId", 0)),
            log_date_time=int(body.get("logDateTime", 0)),
            glue_type=str(body.get("glueType", "BEAN")),
            broadcast_index=int(body.get("broadcastIndex", 0)),
            broadcast_total=int(body.get("broadcastTotal", 1)),
        )
        if t.glue_type != "BEAN":
            return self.envelope(500, "glueType[%s] is not valid." % t.glue_type)
        if t.handler not in HANDLERS:
            return self.envelope(500, "job handler [%s] not found." % t.handler)
        with self.lock:
            jt = self.jobs.get(t.job_id)
            busy = jt is not None and (jt.running is not None or jt.queued_ids)
            if jt is not None and busy:
                if t.block == "DISCARD_LATER":
                    return self.envelope(500, "block strategy effect：Discard Later")
                if t.block == "COVER_EARLY":
                    self.kill_locked(jt, "block strategy effect：Cover Early [job running, killed]")
                    jt = None
                elif t.log_id in jt.queued_ids:
                    return self.envelope(500, "repeate trigger job, logId:%d" % t.log_id)
            if jt is None or jt.stop.is_set():
                jt = JobThread(job_id=t.job_id)
                self.jobs[t.job_id] = jt
                threading.Thread(target=self.job_loop, args=(jt,), daemon=True).start()
            jt.queued_ids.append(t.log_id)
            jt.queue.put(t)
        return self.envelope(200, None)

    def job_loop(self, jt: JobThread) -> None:
        while not jt.stop.is_set():
            try:
                t = jt.queue.get(timeout=3)  # A kill wakes it at once (None).
            except queue.Empty:
                continue
            if t is None:
                break
            with self.lock:
                if t.log_id in jt.queued_ids:
                    jt.queued_ids.remove(t.log_id)
                if jt.stop.is_set():
                    self.callback(t, 500, "[job not executed, in the job queue, killed.]")
                    continue
                jt.running = t
            self.execute(jt, t)
            with self.lock:
                jt.running = None
        # Triggers left behind a kill are failed, as XXL does.
        while True:
            try:
                t = jt.queue.get_nowait()
            except queue.Empty:
                break
            if t is not None:
                self.callback(
                    t,
                    500,
                    "scheduling center kill job. [job not executed, in the job queue, killed.]",
                )

    def execute(self, jt: JobThread, t: Trigger) -> None:
        what = "handler=%s job=%d fire=0 run=%d attempt=0" % (
            t.handler,
            t.job_id,
            t.log_id,
        )
        self.record("start " + what)
        self.log(
            t,
            "start: param=%s shard=%d/%d" % (t.params, t.broadcast_index, t.broadcast_total),
        )
        outcome: Dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            code, msg = self.handle(jt, t)
            outcome["code"], outcome["msg"] = code, msg
            done.set()

        timed_out = False
        if t.timeout_s > 0:
            # As XXL does: a run with a timeout runs on a thread of its own, waited for.
            threading.Thread(target=work, daemon=True).start()
            if not done.wait(t.timeout_s):
                timed_out = True
                jt.stop.set()
                jt.killed_reason = "timeout"
        else:
            work()  # On the job's thread.
        if timed_out:
            self.log(t, "timed out after %d s" % t.timeout_s)
            self.callback(t, 502, "job execute timeout ")
            done.wait()  # The handler thread is told to stop; stubborn ones run on.
            self.record("end %s ok=0 cancelled=1" % what)
            return
        code = int(outcome.get("code", 500))
        cancelled = jt.stop.is_set()
        self.log(t, "end: code=%d" % code)
        self.record(
            "end %s ok=%d cancelled=%d" % (what, 1 if code == 200 else 0, 1 if cancelled else 0)
        )
        self.callback(t, code, outcome.get("msg"))

    def handle(self, jt: JobThread, t: Trigger) -> "tuple[int, Optional[str]]":
        if t.handler == "echo":
            self.log(t, "echo: %s" % t.params)
            return 200, None
        if t.handler == "shard":
            self.log(t, "shard %d of %d" % (t.broadcast_index, t.broadcast_total))
            return 200, None
        if t.handler == "fail":
            return 500, t.params or "failed on purpose"
        if t.handler == "code":
            return int(t.params or "500"), "code %s" % t.params
        ms = int(t.params or "1000")
        end = time.monotonic() + ms / 1000.0
        while time.monotonic() < end:
            if t.handler == "sleep" and jt.stop.is_set():
                self.log(t, "interrupted")
                return (
                    500,
                    jt.killed_reason or "scheduling center kill job. [job running, killed]",
                )
            time.sleep(0.02)
        self.log(t, "slept %d ms" % ms)
        return 200, None

    def kill_locked(self, jt: JobThread, reason: str) -> None:
        jt.killed_reason = reason
        jt.stop.set()
        jt.queue.put(None)
        if self.jobs.get(jt.job_id) is jt:
            del self.jobs[jt.job_id]

    def kill(self, body: Dict[str, Any]) -> Dict[str, Any]:
        job_id = int(body.get("jobId", 0))
        with self.lock:
            jt = self.jobs.get(job_id)
            if jt is None:
                if self.args.envelope == "2":
                    return self.envelope(200, "job thread already killed.")
                return self.envelope(200, None, "job thread already killed.")
            self.kill_locked(jt, "scheduling center kill job. [job running, killed]")
        return self.envelope(200, None)

    def idle_beat(self, body: Dict[str, Any]) -> Dict[str, Any]:
        with self.lock:
            jt = self.jobs.get(int(body.get("jobId", 0)))
            if jt is not None and (jt.running is not None or jt.queued_ids):
                return self.envelope(500, "job thread is running or has trigger queue.")
        return self.envelope(200, None)

    def read_log(self, body: Dict[str, Any]) -> Dict[str, Any]:
        log_id = int(body.get("logId", 0))
        at = int(body.get("logDateTim", body.get("logDateTime", 0)))
        from_line = max(1, int(body.get("fromLineNum", 1)))
        path = self.log_path(log_id, at)
        if not os.path.exists(path):
            result = {
                "fromLineNum": from_line,
                "toLineNum": 0,
                "logContent": "readLog fail, logFile not exists",
                "isEnd": True,
            }
            return self.envelope(200, None, result)
        with open(path) as f:
            lines = f.read().splitlines()
        start = from_line - 1
        picked = lines[start:]
        result = {
            "fromLineNum": from_line,
            "toLineNum": len(lines),
            "logContent": "\n".join(picked) + ("\n" if picked else ""),
            "isEnd": False,
        }
        return self.envelope(200, None, result)

    # ---- admin calls -------------------------------------------------------------------
    def post_admin(self, path: str, payload: Any) -> bool:
        data = json.dumps(payload).encode()
        for admin in self.args.admin.split(","):
            req = urllib.request.Request(
                admin.rstrip("/") + path,
                data=data,
                method="POST",
                headers={"Content-Type": "application/json;charset=UTF-8"},
            )
            if self.args.token:
                req.add_header("XXL-JOB-ACCESS-TOKEN", self.args.token)
            try:
                with urllib.request.urlopen(req, timeout=3) as resp:
                    answer = json.loads(resp.read() or b"{}")
            except (OSError, ValueError) as e:
                print("admin %s%s: %s" % (admin, path, e), file=sys.stderr, flush=True)
                continue
            if answer.get("code") == 200:
                return True
            print("admin %s%s: %s" % (admin, path, answer), file=sys.stderr, flush=True)
        return False

    def registry_param(self) -> Dict[str, str]:
        return {
            "registryGroup": "EXECUTOR",
            "registryKey": self.args.app,
            "registryValue": self.args.address,
        }

    def registry_loop(self) -> None:
        while not self.stopping.is_set():
            self.post_admin("/api/registry", self.registry_param())
            self.stopping.wait(self.args.register_interval)

    def callback(self, t: Trigger, code: int, msg: Optional[str]) -> None:
        item: Dict[str, Any] = {
            "logId": t.log_id,
            "logDateTim": t.log_date_time,
            "handleCode": code,
        }
        if msg is not None:
            item["handleMsg"] = msg
        self.callbacks.put(item)

    def callback_loop(self) -> None:
        while True:
            try:
                first = self.callbacks.get(timeout=0.2)
            except queue.Empty:
                continue
            batch = [first]
            while True:
                try:
                    batch.append(self.callbacks.get_nowait())
                except queue.Empty:
                    break
            if not self.post_admin("/api/callback", batch):
                with open(self.spool_path, "a") as f:
                    f.write(json.dumps(batch) + "\n")

    def spool_retry_loop(self) -> None:
        while True:
            time.sleep(self.args.callback_retry)
            if not os.path.exists(self.spool_path):
                continue
            with open(self.spool_path) as f:
                batches = [json.loads(line) for line in f if line.strip()]
            os.unlink(self.spool_path)
            for batch in batches:
                if not self.post_admin("/api/callback", batch):
                    with open(self.spool_path, "a") as f:
                        f.write(json.dumps(batch) + "\n")


def make_handler(ex: Executor) -> type:
    routes: Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]] = {
        "/run": ex.run,
        "/kill": ex.kill,
        "/log": ex.read_log,
        "/idleBeat": ex.idle_beat,
        "/beat": lambda body: ex.envelope(200, None),
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self, payload: Dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json;charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.reply(ex.envelope(500, "invalid request, HttpMethod not support."))

        def do_POST(self) -> None:  # noqa: N802
            at_us = time.time_ns() // 1000
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length) if length > 0 else b""
            if ex.args.token and self.headers.get("XXL-JOB-ACCESS-TOKEN") != ex.args.token:
                self.reply(ex.envelope(500, "The access token is wrong."))
                return
            route = routes.get(self.path)
            if route is None:
                self.reply(
                    ex.envelope(500, "invalid request, uri-mapping(%s) not found." % self.path)
                )
                return
            try:
                body = json.loads(raw) if raw.strip() else {}
            except ValueError:
                body = {}
            if not isinstance(body, dict):
                body = {}
            if self.path == "/run":
                ex.arrived(body, at_us)
            self.reply(route(body))

        def log_message(self, fmt: str, *args: Any) -> None:
            if ex.args.verbose:
                super().log_message(fmt, *args)

    return Handler


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--address", default="", help="registryValue (default http://host:port/)")
    p.add_argument("--admin", required=True, help="admin addresses, comma-separated")
    p.add_argument("--app", required=True)
    p.add_argument("--token", default="")
    p.add_argument("--token_file", default="")
    p.add_argument("--envelope", choices=("2", "3"), default="2")
    p.add_argument("--log_dir", required=True)
    p.add_argument("--spool_dir", required=True)
    p.add_argument("--executions_file", default="")
    p.add_argument("--arrivals_file", default="")
    p.add_argument("--register_interval", type=float, default=30.0)
    p.add_argument("--callback_retry", type=float, default=1.0)
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    if args.token_file:
        with open(args.token_file) as f:
            args.token = f.read().strip()
    if not args.address:
        args.address = "http://%s:%d/" % (args.host, args.port)
    ex = Executor(args)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(ex))
    server.daemon_threads = True
    for target in (
        ex.registry_loop,
        ex.callback_loop,
        ex.spool_retry_loop,
        server.serve_forever,
    ):
        threading.Thread(target=target, daemon=True).start()
    print(
        "xxl test executor %s on %s (admin %s)" % (args.app, args.address, args.admin),
        flush=True,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
    ex.stopping.set()
    ex.post_admin("/api/registryRemove", ex.registry_param())
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
