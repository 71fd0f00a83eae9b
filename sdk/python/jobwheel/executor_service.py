"""The gRPC surface of an executor (jobwheel.v1.ExecutorService) and its callers' rules.

Who may call: caller tokens (caller_token.py) for this executor's audience
`<app>@<advertised address>`, each issuer only on the RPCs it makes - the dispatchers Run,
RunBatch, Beat, IdleBeat and GetRuns; the scheduler Kill and Log. A missing, malformed, forged,
expired or wrong-audience token is UNAUTHENTICATED; a valid token of the other issuer is
PERMISSION_DENIED; `insecure_dev` accepts any call. A run for another app, or for another
executor instance than this process (RunRequest.app / executor_instance), is REJECTED.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import grpc

from jobwheel.caller_token import (
    ISSUER_DISPATCHER,
    ISSUER_SCHEDULER,
    PREFIX,
    CallerTokenVerifier,
    TokenError,
)
from jobwheel.run_log import LogNotFound, LogRefused, RunLogStore
from jobwheel.run_manager import RunManager
from jobwheel.run_request import InvalidRequest, validate
from jobwheel.stubs import executor_pb2, executor_pb2_grpc

DEFAULT_LOG_LINES = 1000
MAX_LOG_LINES = 10000
MAX_BATCH_RUNS = 1000
MAX_GET_RUNS = 1000

RPC_ISSUER = {
    "Run": ISSUER_DISPATCHER,
    "RunBatch": ISSUER_DISPATCHER,
    "Beat": ISSUER_DISPATCHER,
    "IdleBeat": ISSUER_DISPATCHER,
    "GetRuns": ISSUER_DISPATCHER,
    "Kill": ISSUER_SCHEDULER,
    "Log": ISSUER_SCHEDULER,
}


def instance_tag(instance_id: str) -> str:
    """Executor.instance: the first 32 hex digits of SHA-256 of the instance id."""
    return hashlib.sha256(instance_id.encode("utf-8")).hexdigest()[:32]


def audience_for(app: str, address: str) -> str:
    return f"{app}@{address}"


class CallRefused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Callers:
    insecure_dev: bool
    verifier: CallerTokenVerifier | None


def authorize(metadata: Any, callers: Callers, rpc: str) -> None:
    """Raises CallRefused unless the call's bearer token may make `rpc`."""
    if callers.insecure_dev:
        return
    values = [v for k, v in (metadata or ()) if k == "authorization"]
    if not values:
        raise CallRefused(
            grpc.StatusCode.UNAUTHENTICATED, "missing authorization metadata (Bearer token)"
        )
    value = values[0]
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if len(value) <= len("Bearer ") or not value.startswith("Bearer "):
        raise CallRefused(
            grpc.StatusCode.UNAUTHENTICATED, "authorization metadata is not a Bearer token"
        )
    token = value[len("Bearer ") :]
    if callers.verifier is None or not token.startswith(PREFIX):
        raise CallRefused(grpc.StatusCode.UNAUTHENTICATED, "invalid token")
    try:
        caller = callers.verifier.verify(token)
    except TokenError as e:
        raise CallRefused(grpc.StatusCode.UNAUTHENTICATED, str(e)) from None
    allowed = RPC_ISSUER[rpc]
    if caller.issuer != allowed:
        raise CallRefused(
            grpc.StatusCode.PERMISSION_DENIED,
            f'ExecutorService.{rpc}: tokens of issuer "{caller.issuer}" are not accepted '
            f'(only "{allowed}")',
        )


class ExecutorService(executor_pb2_grpc.ExecutorServiceServicer):
    def __init__(
        self,
        runs: RunManager,
        logs: RunLogStore,
        callers: Callers,
        app: str,
        instance: str,
    ) -> None:
        self._runs = runs
        self._logs = logs
        self._callers = callers
        self._app = app
        self._instance = instance

    def _auth(self, context: grpc.ServicerContext, rpc: str) -> None:
        try:
            authorize(context.invocation_metadata(), self._callers, rpc)
        except CallRefused as e:
            context.abort(e.code, str(e))

    def binding_refusal(self, r: executor_pb2.RunRequest) -> str | None:
        """Why a run is not for this executor (app or instance), or None."""
        if r.app != self._app:
            return f'run {r.run_id}: for app "{r.app}", but this executor serves app "{self._app}"'
        if r.executor_instance != self._instance:
            return (
                f'run {r.run_id}: for executor instance "{r.executor_instance}", but this is '
                f'instance "{self._instance}" (a run meant for another process)'
            )
        return None

    def _submit(self, r: executor_pb2.RunRequest) -> executor_pb2.RunResponse:
        refusal = self.binding_refusal(r)
        if refusal is not None:
            return executor_pb2.RunResponse(
                disposition=executor_pb2.RUN_DISPOSITION_REJECTED, message=refusal
            )
        disposition, message = self._runs.submit(r)
        return executor_pb2.RunResponse(disposition=disposition, message=message)

    def Run(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._auth(context, "Run")
        try:
            validate(request)
        except InvalidRequest as e:
            msg = str(e) if request.run_id <= 0 else f"run {request.run_id}: {e}"
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, msg)
        return self._submit(request)

    def RunBatch(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._auth(context, "RunBatch")
        n = len(request.runs)
        if n == 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "runs: must not be empty")
        if n > MAX_BATCH_RUNS:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"runs: at most {MAX_BATCH_RUNS} per call, got {n}",
            )
        out = executor_pb2.RunBatchResponse()
        for i, run in enumerate(request.runs):
            try:
                validate(run)
            except InvalidRequest as e:
                suffix = f" (run {run.run_id})" if run.run_id > 0 else ""
                out.responses.add(
                    disposition=executor_pb2.RUN_DISPOSITION_REJECTED,
                    message=f"runs[{i}].{e}{suffix}",
                )
                continue
            out.responses.append(self._submit(run))
        return out

    def Kill(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._auth(context, "Kill")
        if request.run_id <= 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "run_id: must be positive")
        killed, message = self._runs.kill(request.run_id, request.reason)
        return executor_pb2.KillResponse(killed=killed, message=message)

    def Beat(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._auth(context, "Beat")
        return executor_pb2.BeatResponse()

    def IdleBeat(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._auth(context, "IdleBeat")
        if request.job_id <= 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "job_id: must be positive")
        running, queued = self._runs.job_load(request.job_id)
        return executor_pb2.IdleBeatResponse(
            idle=running == 0 and queued == 0, running=running, queued=queued
        )

    def Log(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._auth(context, "Log")
        if request.run_id <= 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "run_id: must be positive")
        if request.from_line < 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "from_line: must not be negative")
        if request.max_lines < 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "max_lines: must not be negative")
        first = max(1, request.from_line)
        max_lines = (
            DEFAULT_LOG_LINES if request.max_lines == 0 else min(request.max_lines, MAX_LOG_LINES)
        )
        # Asked before reading: a run that ends in between is seen as active, never the reverse.
        active = self._runs.is_active(request.run_id)
        try:
            page = self._logs.read(request.run_id, first, max_lines)
        except LogNotFound as e:
            context.abort(grpc.StatusCode.NOT_FOUND, str(e))
        except LogRefused as e:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, str(e))
        return executor_pb2.LogResponse(
            lines=page.lines,
            from_line=page.from_line,
            to_line=page.to_line,
            end=page.eof and not active,
        )

    def GetRuns(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._auth(context, "GetRuns")
        ids = list(request.run_ids)
        if len(ids) > MAX_GET_RUNS:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"run_ids: at most {MAX_GET_RUNS} per call, got {len(ids)}",
            )
        for i, rid in enumerate(ids):
            if rid <= 0:
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"run_ids[{i}]: must be positive, got {rid}"
                )
        return executor_pb2.GetRunsResponse(runs=self._runs.presence(ids, request.fence))


class HealthService(grpc.GenericRpcHandler):
    """grpc.health.v1.Health/Check without the grpcio-health-checking package: SERVING
    (encoded by hand: field 1 = 1) while the executor runs, NOT_SERVING (2) once it drains."""

    def __init__(self) -> None:
        self.serving = True

    def service(self, handler_call_details: Any) -> Any:
        if handler_call_details.method != "/grpc.health.v1.Health/Check":
            return None

        def check(_request: bytes, _context: Any) -> bytes:
            return b"\x08\x01" if self.serving else b"\x08\x02"

        return grpc.unary_unary_rpc_method_handler(
            check, request_deserializer=None, response_serializer=None
        )
