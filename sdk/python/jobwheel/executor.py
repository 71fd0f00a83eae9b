"""The Executor: the composition root of the Python SDK.

It registers handlers by name, serves jobwheel.v1.ExecutorService (and grpc.health.v1 Check),
keeps the heartbeat stream to the registry, runs handlers with the block strategies, timeouts
and kill, keeps a log per run, and reports every result through the spool (never lost).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import re
import signal
import socket
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Callable

import grpc

from jobwheel.caller_token import ISSUER_DISPATCHER, ISSUER_SCHEDULER, CallerTokenVerifier
from jobwheel.context import JobContext
from jobwheel.executor_service import (
    Callers,
    ExecutorService,
    HealthService,
    audience_for,
    instance_tag,
)
from jobwheel.heartbeat import HeartbeatClient, HeartbeatOptions, new_instance_id
from jobwheel.metrics import ExecutorMetrics, MetricsServer
from jobwheel.reporter import ResultReporter, grpc_sender
from jobwheel.run_log import RunLogStore
from jobwheel.run_manager import HandlerSpec, RunManager, RunManagerOptions, make_handler_spec
from jobwheel.spool import ResultSpool
from jobwheel.stubs import executor_pb2_grpc, registry_pb2
from jobwheel.version import SDK_VERSION

log = logging.getLogger("jobwheel")

_APP_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z")


@dataclass
class ExecutorOptions:
    app: str
    registry: str = "127.0.0.1:7101"  # Comma list tried in turn; empty: no registration.
    dispatcher: str = "127.0.0.1:7102"  # Empty: results stay spooled.
    token_file: str = ""  # The executor token (ROLE_EXECUTOR for this app, or bootstrap).
    token: str = ""  # The token itself, instead of token_file.
    dispatcher_public_keys: str = ""  # PEM text or a file holding it.
    scheduler_public_keys: str = ""  # PEM text or a file holding it.
    log_dir: str = "jobwheel-executor/logs"
    spool_dir: str = "jobwheel-executor/spool"
    listen: str = "127.0.0.1:7200"  # Port 0 picks one (Executor.port).
    advertise: str = ""  # Default: the listen host (hostname for a wildcard) and bound port.
    insecure_dev: bool = False
    capacity: int = 16
    labels: dict[str, str] = field(default_factory=dict)
    max_threads: int = 32  # Threads for sync handlers.
    # Threads serving ExecutorService calls: each call is short (a handler runs on its own
    # thread), and under the GIL more threads only contend for it.
    rpc_threads: int = 4
    cancel_grace: float = 5.0
    grace_period: float = 10.0
    result_flush_timeout: float = 3.0
    heartbeat_initial_backoff: float = 0.1
    heartbeat_max_backoff: float = 2.0
    metrics_address: str = ""  # host:port for GET /metrics; empty: off.
    log_retention_days: int = 30
    handle_signals: bool = True
    allow_scripts: bool = False  # Script jobs are not supported: True is refused.
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_client_ca_file: str = ""
    tls_ca_file: str = ""  # CA for the registry and dispatcher (enables client TLS).

    def validate(self) -> None:
        """ValueError naming the first bad field."""
        if not _APP_NAME.match(self.app or ""):
            raise ValueError("app: 1 to 128 characters of A-Z a-z 0-9 _ . - (first alphanumeric)")
        if self.allow_scripts:
            raise ValueError(
                "allow_scripts: script jobs are not supported by the Python SDK (refused)"
            )
        if self.capacity < 1:
            raise ValueError("capacity: must be positive")
        if self.max_threads < 1:
            raise ValueError("max_threads: must be positive")
        if self.rpc_threads < 1:
            raise ValueError("rpc_threads: must be positive")
        for name in ("cancel_grace", "grace_period", "result_flush_timeout"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must not be negative")
        _split_host_port(self.listen, "listen")
        if self.advertise:
            _split_host_port(self.advertise, "advertise")
        if self.insecure_dev:
            host, _ = _split_host_port(self.listen, "listen")
            if not _is_loopback(host):
                raise ValueError(
                    f"listen: insecure_dev needs a loopback listen address, got {self.listen}"
                )
            return
        if not self.token and not self.token_file:
            raise ValueError("token_file: required unless insecure_dev (the executor token)")
        if not self.dispatcher_public_keys:
            raise ValueError("dispatcher_public_keys: required unless insecure_dev")
        if not self.scheduler_public_keys:
            raise ValueError("scheduler_public_keys: required unless insecure_dev")


def _split_host_port(address: str, name: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{name}: want host:port, got {address!r}")
    return host, int(port)


def _is_loopback(host: str) -> bool:
    h = host.strip("[]")
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _read_pem(value: str, name: str) -> str:
    if not value or "-----BEGIN" in value:
        return value
    try:
        with open(value, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"{name}: cannot read {value} ({e.strerror})") from None
    if not text.strip():
        raise ValueError(f"{name}: {value} is empty")
    return text


def _read_token(options: ExecutorOptions) -> str:
    if options.token:
        return options.token.strip()
    if not options.token_file:
        return ""
    try:
        with open(options.token_file, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as e:
        raise ValueError(f"token_file: cannot read {options.token_file} ({e.strerror})") from None
    if not token:
        raise ValueError(f"token_file: {options.token_file} is empty")
    return token


def _advertise(advertise: str, listen: str, bound_port: int) -> str:
    host, port = _split_host_port(advertise or listen, "advertise")
    if not advertise and host in ("", "0.0.0.0", "[::]", "::", "*"):
        host = socket.gethostname() or "127.0.0.1"
    if not advertise or port == 0:
        port = bound_port
    return f"{host}:{port}"


def _server_credentials(o: ExecutorOptions) -> grpc.ServerCredentials | None:
    """Server TLS (mTLS with a client CA) from the options' files; None without a cert."""
    if not o.tls_cert_file:
        return None
    with open(o.tls_cert_file, "rb") as f:
        cert = f.read()
    with open(o.tls_key_file, "rb") as f:
        key = f.read()
    ca = None
    if o.tls_client_ca_file:
        with open(o.tls_client_ca_file, "rb") as f:
            ca = f.read()
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=ca, require_client_auth=ca is not None
    )


def _dispatcher_target(target: str) -> tuple[str, list[tuple[str, Any]]]:
    if "," in target and "://" not in target and not target.startswith(("ipv4:", "ipv6:")):
        return "ipv4:" + target, [("grpc.lb_policy_name", "round_robin")]
    return target, []


class Executor:
    """See the module doc and docs/sdk-python.md. Register handlers, then run() or serve()."""

    def __init__(self, app: str, **kwargs: Any) -> None:
        self.options = ExecutorOptions(app=app, **kwargs)
        self._handlers: dict[str, HandlerSpec] = {}
        self._mu = threading.Lock()
        self._started = False
        self._shutting_down = False
        self._done = threading.Event()
        self._stop_requested = threading.Event()
        self.instance_id = new_instance_id()
        self.instance = instance_tag(self.instance_id)
        self.metrics = ExecutorMetrics()
        self.port = 0
        self.advertise_address = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._own_loop_thread: threading.Thread | None = None
        self._server: grpc.Server | None = None
        self._health = HealthService()
        self._metrics_server: MetricsServer | None = None
        self._heartbeat: HeartbeatClient | None = None
        self._reporter: ResultReporter | None = None
        self._spool: ResultSpool | None = None
        self._runs: RunManager | None = None
        self._logs: RunLogStore | None = None
        self._channels: list[grpc.Channel] = []

    # ---- handlers

    def handler(self, name: str) -> Callable[[Callable[[JobContext], Any]], Any]:
        """Decorator: registers a sync or async function as handler `name`."""

        def register(fn: Callable[[JobContext], Any]) -> Any:
            self.register(name, fn)
            return fn

        return register

    def register(self, name: str, fn: Callable[[JobContext], Any]) -> None:
        with self._mu:
            if self._started or self._shutting_down:
                raise RuntimeError(f'handler "{name}": register handlers before start')
            if not name:
                raise ValueError("handler name: must not be empty")
            if not callable(fn):
                raise ValueError(f'handler "{name}": not callable')
            if name in self._handlers:
                raise ValueError(f'handler "{name}": already registered')
            self._handlers[name] = make_handler_spec(fn)

    # ---- lifecycle

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Starts serving (returns at once). Async handlers run on `loop`, or on an event loop
        thread of the executor's own."""
        with self._mu:
            if self._started:
                return
            if self._shutting_down:
                raise RuntimeError("executor was shut down")
            self._started = True
        o = self.options
        o.validate()
        token = _read_token(o)
        verifier = None
        if not o.insecure_dev:
            verifier = CallerTokenVerifier(
                {
                    ISSUER_DISPATCHER: _read_pem(
                        o.dispatcher_public_keys, "dispatcher_public_keys"
                    ),
                    ISSUER_SCHEDULER: _read_pem(o.scheduler_public_keys, "scheduler_public_keys"),
                }
            )
        else:
            log.warning(
                "executor: insecure_dev is set: ExecutorService accepts unauthenticated calls"
            )
        if loop is None and any(h.is_async for h in self._handlers.values()):
            loop = asyncio.new_event_loop()
            self._own_loop_thread = threading.Thread(
                target=loop.run_forever, name="jobwheel-asyncio", daemon=True
            )
            self._own_loop_thread.start()
        self._loop = loop

        self._logs = RunLogStore(o.log_dir, time.time)
        self._logs.init()
        self._logs.on_error(lambda rid, e: log.error("run %d: cannot write its log: %s", rid, e))
        self._spool = ResultSpool(o.spool_dir)
        self._spool.init()

        client_creds = None
        if o.tls_ca_file:
            with open(o.tls_ca_file, "rb") as f:
                ca = f.read()
            client_creds = grpc.ssl_channel_credentials(root_certificates=ca)

        def channel(target: str, options: list[tuple[str, Any]] | None = None) -> grpc.Channel:
            opts = list(options or [])
            ch = (
                grpc.secure_channel(target, client_creds, options=opts)
                if client_creds is not None
                else grpc.insecure_channel(target, options=opts)
            )
            self._channels.append(ch)
            return ch

        sender = None
        if o.dispatcher:
            target, opts = _dispatcher_target(o.dispatcher)
            sender = grpc_sender(channel(target, opts), token)
        else:
            log.warning("executor: no dispatcher; results stay in the spool %s", o.spool_dir)
        self._reporter = ResultReporter(self._spool, sender, self.metrics)
        self._reporter.start()

        self._runs = RunManager(
            RunManagerOptions(cancel_grace=o.cancel_grace, max_threads=o.max_threads),
            dict(self._handlers),
            self._logs,
            self._reporter.submit,
            self.metrics,
            loop_provider=lambda: self._loop,
        )
        callers = Callers(insecure_dev=o.insecure_dev, verifier=verifier)
        service = ExecutorService(self._runs, self._logs, callers, o.app, self.instance)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(
                max_workers=o.rpc_threads, thread_name_prefix="jobwheel-grpc"
            ),
            handlers=[self._health],
            options=[("grpc.max_receive_message_length", 16 << 20)],
        )
        executor_pb2_grpc.add_ExecutorServiceServicer_to_server(service, self._server)
        creds = _server_credentials(o)
        if creds is not None:
            self.port = self._server.add_secure_port(o.listen, creds)
        else:
            self.port = self._server.add_insecure_port(o.listen)
        if self.port == 0:
            raise RuntimeError(f"listen: cannot listen on {o.listen}")
        self._server.start()
        self.advertise_address = _advertise(o.advertise, o.listen, self.port)
        if verifier is not None:
            verifier.set_audience(audience_for(o.app, self.advertise_address))
        self._runs.set_executor_address(self.advertise_address)
        self._runs.start()

        reg = registry_pb2.ExecutorRegistration(
            app=o.app,
            address=self.advertise_address,
            handlers=sorted(self._handlers),
            sdk_version=SDK_VERSION,
            capacity=o.capacity,
            labels=dict(o.labels),
            allow_scripts=False,
            instance_id=self.instance_id,
        )
        # Tells this process from a predecessor at the same address.
        reg.labels["jobwheel.process_start_us"] = str(int(time.time() * 1e6))
        targets = [t.strip() for t in o.registry.split(",") if t.strip()] if o.registry else []
        if not targets:
            log.warning("executor: no registry; not registering (reachable only by address)")
        runs = self._runs

        def fill_beat(beat: registry_pb2.ExecutorBeat) -> None:
            jobs, running, queued = runs.snapshot()
            beat.running_job_ids.extend(jobs)
            beat.running = running
            beat.queued = queued

        self._heartbeat = HeartbeatClient(
            HeartbeatOptions(
                targets=targets,
                registration=reg,
                executor_token=token,
                initial_backoff=o.heartbeat_initial_backoff,
                max_backoff=o.heartbeat_max_backoff,
                channel_factory=lambda t: channel(t),
            ),
            fill_beat,
            self.metrics,
        )
        self._heartbeat.start()
        if o.metrics_address:
            self._metrics_server = MetricsServer(self.metrics, o.metrics_address)
            self._metrics_server.start()
        threading.Thread(target=self._cleanup_loop, name="jobwheel-cleanup", daemon=True).start()
        log.info(
            "executor app=%s serving on %s (advertised %s), handlers [%s], sdk %s",
            o.app,
            o.listen,
            self.advertise_address,
            ", ".join(sorted(self._handlers)),
            SDK_VERSION,
        )

    def run(self) -> None:
        """Starts, then blocks until shutdown() or SIGTERM/SIGINT (handle_signals), draining."""
        self.start()
        old: dict[int, Any] = {}
        if self.options.handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                old[sig] = signal.signal(sig, lambda s, _f: self._on_signal(s))
        try:
            while not self._stop_requested.wait(0.2):
                pass
        finally:
            self.shutdown()
            for sig, h in old.items():
                signal.signal(sig, h)

    async def serve(self) -> None:
        """The asyncio form of run(): async handlers run on the calling loop."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.start, loop)
        if self.options.handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, self._on_signal, sig)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        try:
            while not self._stop_requested.is_set():
                await asyncio.sleep(0.1)
        finally:
            await loop.run_in_executor(None, self.shutdown)

    def request_stop(self) -> None:
        """Makes run()/serve() return after a graceful shutdown (signal-safe)."""
        self._stop_requested.set()

    def _on_signal(self, sig: int) -> None:
        log.info("executor: signal %d received; shutting down", sig)
        self._stop_requested.set()

    def shutdown(self) -> None:
        """New runs are refused; goodbye to the registry; in-flight runs get grace_period, then
        are failed; results delivered for up to result_flush_timeout (the rest stay spooled);
        the server stops. Idempotent and joining."""
        with self._mu:
            if self._shutting_down:
                wait = True
            else:
                wait = False
                self._shutting_down = True
            started = self._started
        if wait:
            self._done.wait()
            return
        self._stop_requested.set()
        if not started:
            self._done.set()
            return
        o = self.options
        log.info("executor: shutting down (grace %gs)", o.grace_period)
        assert self._runs is not None and self._reporter is not None
        self._runs.stop_accepting()
        self._health.serving = False
        if self._heartbeat is not None:
            self._heartbeat.shutdown("executor shutting down")
        self._runs.shutdown(o.grace_period)
        left = self._reporter.flush(o.result_flush_timeout)
        if left:
            log.warning(
                "executor: %d result(s) not yet acknowledged stay in %s for the next start",
                left,
                o.spool_dir,
            )
        self._reporter.shutdown()
        if self._spool is not None:
            self._spool.close()
        if self._logs is not None:
            self._logs.close()
        if self._server is not None:
            self._server.stop(2).wait()
        if self._metrics_server is not None:
            self._metrics_server.stop()
        for ch in self._channels:
            ch.close()
        if self._own_loop_thread is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._done.set()
        log.info("executor: shut down")

    def _cleanup_loop(self) -> None:
        while not self._stop_requested.is_set():
            if self._logs is not None:
                removed = self._logs.cleanup(self.options.log_retention_days)
                if removed:
                    log.info("run logs: removed %d day folder(s)", removed)
            self._stop_requested.wait(3600)

    # ---- for tests and embedding

    @property
    def registered(self) -> bool:
        return self._heartbeat is not None and self._heartbeat.registered

    @property
    def run_manager(self) -> RunManager | None:
        return self._runs


def env_flag(name: str, default: str = "") -> str:
    """JOBWHEEL_<NAME> from the environment (the demo's flags may come from there)."""
    return os.environ.get("JOBWHEEL_" + name.upper(), default)
