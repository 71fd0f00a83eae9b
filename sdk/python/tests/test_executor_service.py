from __future__ import annotations

import os
from typing import Any, Iterator

import grpc
import pytest
from helpers import eventually

from jobwheel import Executor, JobContext
from jobwheel.caller_token import generate_key_pair, sign_caller_token
from jobwheel.stubs import executor_pb2, executor_pb2_grpc, types_pb2

D = executor_pb2


@pytest.fixture()
def stack(tmp_path: Any) -> Iterator[dict[str, Any]]:
    disp, sched = generate_key_pair(), generate_key_pair()
    token = os.path.join(str(tmp_path), "executor.token")
    with open(token, "w") as f:
        f.write("jw_" + "0" * 64 + "\n")
    ran: list[int] = []
    ex = Executor(
        app="billing",
        registry="",
        dispatcher="",
        token_file=token,
        dispatcher_public_keys=disp[1].decode(),
        scheduler_public_keys=sched[1].decode(),
        log_dir=os.path.join(str(tmp_path), "logs"),
        spool_dir=os.path.join(str(tmp_path), "spool"),
        listen="127.0.0.1:0",
        handle_signals=False,
    )

    @ex.handler("lines")
    def lines(ctx: JobContext) -> str:
        ran.append(ctx.run_id)
        for i in range(int(ctx.param or "0")):
            ctx.log.info("line %d", i)
        return "ok"

    ex.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{ex.port}")
    yield {
        "ex": ex,
        "stub": executor_pb2_grpc.ExecutorServiceStub(channel),
        "channel": channel,
        "disp": disp[0],
        "sched": sched[0],
        "aud": f"billing@{ex.advertise_address}",
        "ran": ran,
    }
    channel.close()
    ex.shutdown()


def md(key: bytes, issuer: str, aud: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", "Bearer " + sign_caller_token(key, issuer, aud)),)


def run_req(s: dict[str, Any], run_id: int, **kw: Any) -> executor_pb2.RunRequest:
    base: dict[str, Any] = dict(
        run_id=run_id,
        job_id=1,
        handler="lines",
        app="billing",
        executor_instance=s["ex"].instance,
        result_key=b"x" * 32,
    )
    base.update(kw)
    return executor_pb2.RunRequest(**base)


def code_of(fn: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as e:
        fn()
    return e.value.code(), e.value.details()


def test_tokens_missing_forged_wrong_audience_and_wrong_issuer(stack: dict[str, Any]) -> None:
    s, stub = stack, stack["stub"]
    req = run_req(s, 1)
    c, msg = code_of(lambda: stub.Run(req))
    assert c == grpc.StatusCode.UNAUTHENTICATED and "missing authorization" in msg
    c, msg = code_of(lambda: stub.Run(req, metadata=(("authorization", "Bearer jw_" + "0" * 64),)))
    assert c == grpc.StatusCode.UNAUTHENTICATED and msg == "invalid token"
    forger, _ = generate_key_pair()
    c, msg = code_of(lambda: stub.Run(req, metadata=md(forger, "dispatcher", s["aud"])))
    assert c == grpc.StatusCode.UNAUTHENTICATED and "bad signature" in msg
    # The bare address (audience without the app) and another app's audience.
    addr = s["ex"].advertise_address
    for aud in (addr, f"other@{addr}"):
        c, msg = code_of(lambda: stub.Run(req, metadata=md(s["disp"], "dispatcher", aud)))
        assert c == grpc.StatusCode.UNAUTHENTICATED and "wrong audience" in msg
    c, msg = code_of(lambda: stub.Run(req, metadata=md(s["sched"], "scheduler", s["aud"])))
    assert c == grpc.StatusCode.PERMISSION_DENIED and 'only "dispatcher"' in msg
    kill = executor_pb2.KillRequest(run_id=1)
    c, _ = code_of(lambda: stub.Kill(kill, metadata=md(s["disp"], "dispatcher", s["aud"])))
    assert c == grpc.StatusCode.PERMISSION_DENIED
    c, _ = code_of(lambda: stub.Beat(executor_pb2.BeatRequest()))
    assert c == grpc.StatusCode.UNAUTHENTICATED
    assert s["ran"] == []
    stub.Beat(executor_pb2.BeatRequest(), metadata=md(s["disp"], "dispatcher", s["aud"]))
    resp = stub.Run(req, metadata=md(s["disp"], "dispatcher", s["aud"]))
    assert resp.disposition == D.RUN_DISPOSITION_STARTED
    eventually(lambda: s["ran"] == [1])
    k = stub.Kill(kill, metadata=md(s["sched"], "scheduler", s["aud"]))
    assert k.killed is False


def test_runs_for_another_app_or_instance_are_rejected(stack: dict[str, Any]) -> None:
    s, stub = stack, stack["stub"]
    m = md(s["disp"], "dispatcher", s["aud"])
    r = stub.Run(run_req(s, 2, app="payroll"), metadata=m)
    assert r.disposition == D.RUN_DISPOSITION_REJECTED and 'app "payroll"' in r.message
    r = stub.Run(run_req(s, 3, executor_instance="0" * 32), metadata=m)
    assert r.disposition == D.RUN_DISPOSITION_REJECTED and "instance" in r.message
    r = stub.Run(run_req(s, 4, executor_instance=""), metadata=m)
    assert r.disposition == D.RUN_DISPOSITION_REJECTED
    batch = stub.RunBatch(
        executor_pb2.RunBatchRequest(
            runs=[run_req(s, 5, app=""), run_req(s, 6), run_req(s, 7, job_id=0)]
        ),
        metadata=m,
    )
    d = [x.disposition for x in batch.responses]
    assert d == [D.RUN_DISPOSITION_REJECTED, D.RUN_DISPOSITION_STARTED, D.RUN_DISPOSITION_REJECTED]
    assert batch.responses[2].message == "runs[2].job_id: must be positive (run 7)"
    eventually(lambda: s["ran"] == [6])
    c, msg = code_of(lambda: stub.RunBatch(executor_pb2.RunBatchRequest(), metadata=m))
    assert c == grpc.StatusCode.INVALID_ARGUMENT and msg == "runs: must not be empty"
    assert (
        s["ex"].instance
        == __import__("hashlib").sha256(s["ex"].instance_id.encode()).hexdigest()[:32]
    )
    assert len(s["ex"].instance_id) == 32


def test_log_paging_and_get_runs(stack: dict[str, Any]) -> None:
    s, stub = stack, stack["stub"]
    m = md(s["disp"], "dispatcher", s["aud"])
    ms = md(s["sched"], "scheduler", s["aud"])
    stub.Run(run_req(s, 10, param="25"), metadata=m)
    eventually(lambda: not s["ex"].run_manager.is_active(10))
    page = stub.Log(executor_pb2.LogRequest(run_id=10, max_lines=10), metadata=ms)
    assert (page.from_line, page.to_line, page.end) == (1, 10, False)
    assert "run 10 accepted: job 1, handler lines" in page.lines[0]
    assert "x" * 32 not in "".join(page.lines)
    everything: list[str] = []
    line = 1
    while True:
        p = stub.Log(executor_pb2.LogRequest(run_id=10, from_line=line, max_lines=10), metadata=ms)
        everything += p.lines
        line = p.to_line + 1
        if p.end:
            break
    assert [ln.split(" ", 2)[2] for ln in everything if " line " in ln] == [
        f"line {i}" for i in range(25)
    ]
    assert "run 10 ended: SUCCEEDED (code 200) ok" in everything[-1]
    c, _ = code_of(lambda: stub.Log(executor_pb2.LogRequest(run_id=999), metadata=ms))
    assert c == grpc.StatusCode.NOT_FOUND
    c, msg = code_of(lambda: stub.Log(executor_pb2.LogRequest(run_id=0), metadata=ms))
    assert c == grpc.StatusCode.INVALID_ARGUMENT and msg == "run_id: must be positive"
    g = stub.GetRuns(executor_pb2.GetRunsRequest(run_ids=[10, 11], fence=True), metadata=m)
    assert [x.presence for x in g.runs] == [D.RUN_PRESENCE_ENDED, D.RUN_PRESENCE_FENCED]
    assert g.runs[0].status == types_pb2.RUN_STATUS_SUCCEEDED
    r = stub.Run(run_req(s, 11), metadata=m)
    assert r.disposition == D.RUN_DISPOSITION_REJECTED and "fenced" in r.message
    r = stub.Run(run_req(s, 10), metadata=m)
    assert "already ran here" in r.message
    assert s["ran"] == [10]
    c, msg = code_of(lambda: stub.GetRuns(executor_pb2.GetRunsRequest(run_ids=[1, -1]), metadata=m))
    assert c == grpc.StatusCode.INVALID_ARGUMENT and msg.startswith("run_ids[1]")
    idle = stub.IdleBeat(executor_pb2.IdleBeatRequest(job_id=1), metadata=m)
    assert idle.idle


def test_health_check_serves(stack: dict[str, Any]) -> None:
    call = stack["channel"].unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    assert call(b"") == b"\x08\x01"


def test_options_are_validated(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="token_file"):
        Executor(app="a", dispatcher_public_keys="x", scheduler_public_keys="y").start()
    with pytest.raises(ValueError, match="allow_scripts"):
        Executor(app="a", insecure_dev=True, allow_scripts=True).start()
    with pytest.raises(ValueError, match="loopback"):
        Executor(app="a", insecure_dev=True, listen="0.0.0.0:0").start()
    with pytest.raises(ValueError, match="app"):
        Executor(app="", insecure_dev=True).start()
    with pytest.raises(ValueError, match="rpc_threads: must be positive"):
        Executor(app="a", insecure_dev=True, rpc_threads=0).start()


def test_instance_tag_and_audience_match_the_cpp_definitions() -> None:
    from jobwheel.executor_service import audience_for, instance_tag

    # The vectors of common/model:instance_tag_test.
    assert instance_tag("abc") == "ba7816bf8f01cfea414140de5dae2223"
    assert audience_for("billing", "127.0.0.1:7201") == "billing@127.0.0.1:7201"


def test_serve_runs_async_handlers_on_the_calling_loop(tmp_path: Any) -> None:
    import asyncio

    seen: dict[str, Any] = {}
    ex = Executor(
        app="aio",
        registry="",
        dispatcher="",
        insecure_dev=True,
        listen="127.0.0.1:0",
        log_dir=os.path.join(str(tmp_path), "logs"),
        spool_dir=os.path.join(str(tmp_path), "spool"),
        handle_signals=False,
    )

    @ex.handler("where")
    async def where(ctx: JobContext) -> str:
        seen["loop"] = asyncio.get_running_loop()
        return "here"

    async def main() -> None:
        task = asyncio.create_task(ex.serve())
        while ex.port == 0:
            await asyncio.sleep(0.01)
        ch = grpc.aio.insecure_channel(f"127.0.0.1:{ex.port}")
        stub = executor_pb2_grpc.ExecutorServiceStub(ch)
        req = executor_pb2.RunRequest(
            run_id=1, job_id=1, handler="where", app="aio", executor_instance=ex.instance
        )
        resp = await stub.Run(req)
        assert resp.disposition == D.RUN_DISPOSITION_STARTED
        while "loop" not in seen:
            await asyncio.sleep(0.01)
        assert seen["loop"] is asyncio.get_running_loop()
        await ch.close()
        ex.request_stop()
        await asyncio.wait_for(task, 20)

    asyncio.run(main())
    assert ex.run_manager is not None and not ex.run_manager.is_active(1)
