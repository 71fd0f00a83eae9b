"""Validation of RunRequest and the run log's "accepted" line (which never holds the key)."""

from __future__ import annotations

from jobwheel.context import TRIGGER_NAMES
from jobwheel.stubs import executor_pb2, types_pb2

SCRIPT_GLUE_TYPES = (types_pb2.GLUE_TYPE_SCRIPT_SHELL, types_pb2.GLUE_TYPE_SCRIPT_PYTHON)


class InvalidRequest(ValueError):
    """A malformed request: INVALID_ARGUMENT "<field>: <problem>"."""


def validate(r: executor_pb2.RunRequest) -> None:
    if r.run_id <= 0:
        raise InvalidRequest("run_id: must be positive")
    if r.job_id <= 0:
        raise InvalidRequest("job_id: must be positive")
    if r.glue_type not in types_pb2.GlueType.values():
        raise InvalidRequest(f"glue_type: unknown value {r.glue_type}")
    if r.block_strategy not in types_pb2.BlockStrategy.values():
        raise InvalidRequest(f"block_strategy: unknown value {r.block_strategy}")
    if r.shard_total < 0:
        raise InvalidRequest("shard_total: must not be negative")
    if r.shard_total > 0 and not 0 <= r.shard_index < r.shard_total:
        raise InvalidRequest(f"shard_index: must be in [0, {r.shard_total})")
    if r.shard_total == 0 and r.shard_index != 0:
        raise InvalidRequest("shard_index: set without shard_total")
    if r.HasField("timeout") and (r.timeout.seconds < 0 or r.timeout.nanos < 0):
        raise InvalidRequest("timeout: must not be negative")
    if r.glue_type in SCRIPT_GLUE_TYPES:
        if not r.script_source:
            raise InvalidRequest("script_source: must not be empty for a script job")
        if r.script_version < 0:
            raise InvalidRequest("script_version: must not be negative")
    elif not r.handler:
        raise InvalidRequest("handler: must not be empty")


def timeout_seconds(r: executor_pb2.RunRequest) -> float:
    if not r.HasField("timeout"):
        return 0.0
    return r.timeout.seconds + r.timeout.nanos / 1e9


def accepted_line(r: executor_pb2.RunRequest, outcome: str) -> str:
    if r.glue_type in SCRIPT_GLUE_TYPES:
        what = f"script {types_pb2.GlueType.Name(r.glue_type)} v{r.script_version}"
    else:
        what = f"handler {r.handler}"
    shard = f", shard {r.shard_index}/{r.shard_total}" if r.shard_total > 0 else ""
    trigger = TRIGGER_NAMES.get(r.trigger_type, "unspecified")
    return (
        f"run {r.run_id} accepted: job {r.job_id}, {what}, fire {r.fire_id}, trigger "
        f"{trigger}, attempt {r.attempt}{shard}; {outcome}"
    )
