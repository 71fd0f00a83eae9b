"""The generated jobwheel.v1 stubs, with a clear message when they were not generated."""

from __future__ import annotations

try:
    from jobwheel.v1 import dispatcher_pb2, dispatcher_pb2_grpc  # noqa: F401
    from jobwheel.v1 import executor_pb2, executor_pb2_grpc  # noqa: F401
    from jobwheel.v1 import registry_pb2, registry_pb2_grpc  # noqa: F401
    from jobwheel.v1 import types_pb2  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "jobwheel: the generated stubs jobwheel.v1.*_pb2 are missing: install the package "
        "(pip install ./sdk/python, which runs protoc), build //sdk/python:jobwheel_pb2, or run "
        "sdk/python/gen_stubs.py DIR and put DIR on sys.path (" + str(e) + ")"
    ) from e

__all__ = [
    "dispatcher_pb2",
    "dispatcher_pb2_grpc",
    "executor_pb2",
    "executor_pb2_grpc",
    "registry_pb2",
    "registry_pb2_grpc",
    "types_pb2",
]
