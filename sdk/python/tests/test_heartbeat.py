from __future__ import annotations

import queue
import threading
from concurrent import futures
from typing import Any, Iterator

import grpc
import pytest
from helpers import eventually

from jobwheel.heartbeat import HeartbeatClient, HeartbeatOptions
from jobwheel.metrics import ExecutorMetrics
from jobwheel.stubs import registry_pb2, registry_pb2_grpc


class FakeRegistry(registry_pb2_grpc.RegistryServiceServicer):
    """Records registrations and beats; the test pushes instructions or ends streams."""

    def __init__(self) -> None:
        self.registrations: list[registry_pb2.ExecutorRegistration] = []
        self.beats = 0
        self.goodbyes: list[str] = []
        self.tokens: list[str] = []
        self.control: queue.Queue[Any] = queue.Queue()
        self.mu = threading.Lock()

    def Heartbeat(self, request_iterator: Any, context: Any) -> Iterator[Any]:  # noqa: N802
        self.tokens.append(dict(context.invocation_metadata()).get("authorization", ""))
        inbox: queue.Queue[Any] = queue.Queue()

        def pump() -> None:
            try:
                for r in request_iterator:
                    inbox.put(r)
            except grpc.RpcError:
                pass
            inbox.put(None)

        threading.Thread(target=pump, daemon=True).start()
        while True:
            try:
                cmd = self.control.get_nowait()
            except queue.Empty:
                cmd = None
            if cmd == "end":
                return
            if cmd in ("reregister", "drain"):
                kind = (
                    registry_pb2.INSTRUCTION_KIND_REREGISTER
                    if cmd == "reregister"
                    else registry_pb2.INSTRUCTION_KIND_DRAIN
                )
                yield registry_pb2.HeartbeatResponse(
                    instruction=registry_pb2.HeartbeatInstruction(kind=kind, reason="test")
                )
            try:
                r = inbox.get(timeout=0.02)
            except queue.Empty:
                continue
            if r is None:
                return
            kind = r.WhichOneof("kind")
            with self.mu:
                if kind == "register":
                    self.registrations.append(r.register)
                    resp = registry_pb2.HeartbeatResponse(
                        registered=registry_pb2.HeartbeatRegistered(replica_id="r1")
                    )
                    resp.registered.beat_interval.FromMilliseconds(50)
                    yield resp
                elif kind == "beat":
                    self.beats += 1
                    yield registry_pb2.HeartbeatResponse(
                        ack=registry_pb2.HeartbeatAck(seq=r.beat.seq)
                    )
                elif kind == "goodbye":
                    self.goodbyes.append(r.goodbye.reason)
                    return


@pytest.fixture()
def registry() -> Iterator[tuple[FakeRegistry, str]]:
    fake = FakeRegistry()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    registry_pb2_grpc.add_RegistryServiceServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield fake, f"127.0.0.1:{port}"
    server.stop(0)


def client(target: str, metrics: ExecutorMetrics) -> HeartbeatClient:
    reg = registry_pb2.ExecutorRegistration(app="billing", address="127.0.0.1:7200")
    reg.handlers.extend(["a"])

    def fill(beat: registry_pb2.ExecutorBeat) -> None:
        beat.running = 2
        beat.running_job_ids.extend([7])

    return HeartbeatClient(
        HeartbeatOptions(
            targets=[target],
            registration=reg,
            executor_token="jw_test",
            initial_backoff=0.02,
            max_backoff=0.1,
        ),
        fill,
        metrics,
    )


def test_registers_beats_reconnects_and_says_goodbye(registry: tuple[FakeRegistry, str]) -> None:
    fake, target = registry
    m = ExecutorMetrics()
    hb = client(target, m)
    hb.start()
    eventually(lambda: hb.registered and fake.beats >= 3, what="registered and beating")
    assert m.heartbeat_connected == 1
    assert fake.tokens[0] == "Bearer jw_test"
    first = fake.registrations[0]
    assert len(first.instance_id) == 32 and int(first.instance_id, 16) >= 0
    # REREGISTER: the registration again, on the same stream.
    fake.control.put("reregister")
    eventually(lambda: len(fake.registrations) == 2, what="re-registered")
    assert len(fake.tokens) == 1
    # The registry ends the stream: a new one, with the same instance id.
    fake.control.put("end")
    eventually(lambda: len(fake.registrations) == 3 and len(fake.tokens) == 2, what="reconnected")
    # DRAIN: the stream is left at once for the next address (no goodbye).
    fake.control.put("drain")
    eventually(lambda: len(fake.tokens) == 3 and hb.registered, what="moved after drain")
    assert fake.goodbyes == []
    assert {r.instance_id for r in fake.registrations} == {first.instance_id}
    hb.shutdown("executor shutting down")
    assert fake.goodbyes == ["executor shutting down"]
    assert m.heartbeat_connected == 0


def test_reconnects_when_the_registry_is_not_there_yet() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    m = ExecutorMetrics()
    hb = client(f"127.0.0.1:{port}", m)
    hb.start()
    fake = FakeRegistry()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    registry_pb2_grpc.add_RegistryServiceServicer_to_server(fake, server)
    eventually(lambda: hb.failures_in_a_row >= 2, what="failed attempts while it is down")
    assert server.add_insecure_port(f"127.0.0.1:{port}") == port
    server.start()
    try:
        eventually(lambda: hb.registered, timeout=10, what="registered once the registry is up")
    finally:
        hb.shutdown("bye")
        server.stop(0)
