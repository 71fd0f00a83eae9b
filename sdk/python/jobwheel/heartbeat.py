"""The bidi Heartbeat stream to the registry: register, then a beat every beat_interval.

One stream at a time. It reconnects with jittered, doubling backoff (initial_backoff up to
max_backoff), moving to the next registry address of the list. REREGISTER re-sends the
registration on the same stream; DRAIN half-closes it and connects to the next address at
once (no goodbye: draining is not leaving). A stream without a `registered` reply within
register_timeout is dropped. The instance id (32 random hex digits from the OS's CSPRNG) is
picked once per process and sent unchanged on every reconnect. Shutdown sends a goodbye and
waits (up to goodbye_timeout) for the registry to close the stream.
"""

from __future__ import annotations

import logging
import queue
import random
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import grpc

from jobwheel.metrics import ExecutorMetrics
from jobwheel.stubs import registry_pb2, registry_pb2_grpc

log = logging.getLogger("jobwheel")

_END = object()
_WAKE = object()  # Put in a session's inbox: look at the stop flag now.


def new_instance_id() -> str:
    return secrets.token_hex(16)


@dataclass
class HeartbeatOptions:
    targets: list[str]
    registration: registry_pb2.ExecutorRegistration
    executor_token: str = ""
    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    register_timeout: float = 5.0
    goodbye_timeout: float = 3.0
    default_beat_interval: float = 1.0
    channel_factory: Callable[[str], grpc.Channel] = field(
        default=lambda target: grpc.insecure_channel(target)
    )


class HeartbeatClient:
    def __init__(
        self,
        options: HeartbeatOptions,
        fill_beat: Callable[[registry_pb2.ExecutorBeat], None],
        metrics: ExecutorMetrics,
    ) -> None:
        self._opt = options
        if not options.registration.instance_id:
            options.registration.instance_id = new_instance_id()
        self._fill_beat = fill_beat
        self._metrics = metrics
        self._mu = threading.Lock()
        self._stop = threading.Event()
        self._goodbye_reason = ""
        self._thread: threading.Thread | None = None
        self._call: Any = None
        self._inbox: queue.Queue[Any] | None = None  # The session's, to wake it at shutdown.
        self._registered = False
        self.registrations = 0
        self.failures_in_a_row = 0
        self._seq = 0
        self._rng = random.Random()
        self._channels: dict[str, grpc.Channel] = {}

    @property
    def instance_id(self) -> str:
        return self._opt.registration.instance_id

    @property
    def registered(self) -> bool:
        with self._mu:
            return self._registered

    def start(self) -> None:
        if not self._opt.targets or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="jobwheel-heartbeat", daemon=True)
        self._thread.start()

    def shutdown(self, reason: str) -> None:
        with self._mu:
            self._goodbye_reason = reason
        self._stop.set()
        with self._mu:
            if self._inbox is not None:
                self._inbox.put(_WAKE)  # The session sleeps until its next beat otherwise.
        if self._thread is not None:
            self._thread.join(self._opt.goodbye_timeout + 2)
            with self._mu:
                call = self._call
            if self._thread.is_alive() and call is not None:
                call.cancel()
                self._thread.join(1)
        for ch in self._channels.values():
            ch.close()

    def _backoff(self, attempt: int) -> float:
        base = min(self._opt.max_backoff, self._opt.initial_backoff * (2 ** min(attempt, 30)))
        return base * (0.5 + self._rng.random() / 2)

    def _loop(self) -> None:
        index = 0
        failures = 0
        while not self._stop.is_set():
            target = self._opt.targets[index % len(self._opt.targets)]
            end = self._session(target)
            if end == "stopped":
                break
            index += 1
            if end == "drained":
                failures = 0
                continue
            if end == "was_registered":
                failures = 0
                delay = self._backoff(0)
            else:
                delay = self._backoff(failures)
                failures += 1
            self._stop.wait(delay)

    def _channel(self, target: str) -> grpc.Channel:
        ch = self._channels.get(target)
        if ch is None:
            ch = self._opt.channel_factory(target)
            self._channels[target] = ch
        return ch

    def _goodbye(self, outbox: queue.Queue[Any], reader: threading.Thread, target: str) -> None:
        """Says goodbye on the stream and waits for the registry to close it."""
        with self._mu:
            reason = self._goodbye_reason
        outbox.put(
            registry_pb2.HeartbeatRequest(goodbye=registry_pb2.ExecutorGoodbye(reason=reason))
        )
        outbox.put(_END)
        reader.join(self._opt.goodbye_timeout)
        if reader.is_alive():
            log.warning(
                "registry %s did not close the stream within %gs after goodbye",
                target,
                self._opt.goodbye_timeout,
            )

    def _session(self, target: str) -> str:
        stub = registry_pb2_grpc.RegistryServiceStub(self._channel(target))
        outbox: queue.Queue[Any] = queue.Queue()
        inbox: queue.Queue[Any] = queue.Queue()

        def requests() -> Any:
            while True:
                item = outbox.get()
                if item is _END:
                    return
                yield item

        metadata = (
            (("authorization", "Bearer " + self._opt.executor_token),)
            if self._opt.executor_token
            else ()
        )
        call = stub.Heartbeat(requests(), metadata=metadata)
        with self._mu:
            self._call = call
            self._inbox = inbox

        def read() -> None:
            try:
                for resp in call:
                    inbox.put(resp)
                inbox.put(("done", None))
            except grpc.RpcError as e:
                inbox.put(("done", e))

        reader = threading.Thread(target=read, name="jobwheel-heartbeat-read", daemon=True)
        reader.start()
        reg = registry_pb2.HeartbeatRequest(register=self._opt.registration)
        outbox.put(reg)
        registered = False
        interval = self._opt.default_beat_interval
        next_beat = float("inf")
        register_deadline = time.monotonic() + self._opt.register_timeout
        end = "failed"
        error: Any = None
        try:
            while True:
                now = time.monotonic()
                wake = next_beat if registered else register_deadline
                # Asleep until the next beat (or the register deadline), a reply, or _WAKE.
                timeout = 0.0 if self._stop.is_set() else max(0.0, wake - now)
                try:
                    item = inbox.get(timeout=timeout)
                except queue.Empty:
                    item = None
                if item is _WAKE:
                    item = None
                if self._stop.is_set():
                    end = "stopped"
                    if registered and not (isinstance(item, tuple) and item[0] == "done"):
                        self._goodbye(outbox, reader, target)
                    break
                if isinstance(item, tuple) and item[0] == "done":
                    error = item[1]
                    end = "was_registered" if registered else "failed"
                    break
                if item is not None:
                    kind = item.WhichOneof("kind")
                    if kind == "registered":
                        first = not registered
                        registered = True
                        d = item.registered.beat_interval
                        secs = d.seconds + d.nanos / 1e9
                        if secs > 0:
                            interval = secs
                        next_beat = time.monotonic() + interval
                        with self._mu:
                            self._registered = True
                            self.registrations += 1
                        self._metrics.set("heartbeat_connected", 1)
                        if first:
                            log.info(
                                "registered with registry %s (replica %s), beat every %gs",
                                target,
                                item.registered.replica_id,
                                interval,
                            )
                    elif kind == "instruction":
                        ik = item.instruction.kind
                        if ik == registry_pb2.INSTRUCTION_KIND_REREGISTER:
                            log.info(
                                "registry %s asks to re-register: %s",
                                target,
                                item.instruction.reason,
                            )
                            outbox.put(reg)
                        elif ik == registry_pb2.INSTRUCTION_KIND_DRAIN:
                            log.info(
                                "registry %s is draining (%s); moving to another replica",
                                target,
                                item.instruction.reason,
                            )
                            outbox.put(_END)
                            end = "drained"
                            break
                    continue
                now = time.monotonic()
                if not registered and now >= register_deadline:
                    log.warning(
                        "registry %s: no `registered` reply within %gs; reconnecting",
                        target,
                        self._opt.register_timeout,
                    )
                    break
                if registered and now >= next_beat:
                    beat = registry_pb2.ExecutorBeat()
                    self._fill_beat(beat)
                    self._seq += 1
                    beat.seq = self._seq
                    outbox.put(registry_pb2.HeartbeatRequest(beat=beat))
                    next_beat += interval
                    if next_beat < now:
                        next_beat = now + interval
        finally:
            with self._mu:
                self._registered = False
                self._call = None
                self._inbox = None
            self._metrics.set("heartbeat_connected", 0)
            outbox.put(_END)
            if end != "stopped" or reader.is_alive():
                call.cancel()
            reader.join(1)
        if end == "stopped":
            log.info("heartbeat stream to %s closed after goodbye", target)
            return end
        was_registered = end in ("was_registered", "drained")
        with self._mu:
            self.failures_in_a_row = 0 if was_registered else self.failures_in_a_row + 1
            n = self.failures_in_a_row
        why = "closed by the registry"
        if error is not None:
            why = f"{error.code().name}: {error.details()}"
        # While the registry is down every attempt fails: warn on the first and then rarely.
        if was_registered or n == 1 or n % 50 == 0:
            log.warning(
                "heartbeat stream to %s ended (%s); %d failed attempt(s) in a row; reconnecting",
                target,
                why,
                n,
            )
        else:
            log.debug("heartbeat stream to %s ended (%s)", target, why)
        return end
