#!/usr/bin/env python3
"""Generates the jobwheel.v1 gRPC stubs from proto/ with protoc and grpc_python_plugin.

    gen_stubs.py OUT_DIR [PROTO_ROOT]

writes OUT_DIR/jobwheel/v1/*_pb2.py and *_pb2_grpc.py (the generated code imports them as
`jobwheel.v1.<name>_pb2`). PROTO_ROOT defaults to the repository's proto/ directory. The stubs
are build outputs, never committed: setup.py, the Bazel target //sdk/python:jobwheel_pb2 and
the checks under tests/python_sdk/ call this script.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

PROTOS = (
    "app_admin",
    "dispatcher",
    "executor",
    "job_admin",
    "registry",
    "token_admin",
    "types",
)
PROTOC = os.environ.get("JOBWHEEL_PROTOC", "/usr/bin/protoc")
PLUGIN = os.environ.get("JOBWHEEL_GRPC_PYTHON_PLUGIN", "/usr/bin/grpc_python_plugin")


def default_proto_root() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "proto"))


def generate(out_dir: str, proto_root: str | None = None) -> list[str]:
    """Runs protoc; returns the generated files. Raises RuntimeError naming what is missing."""
    root = proto_root or default_proto_root()
    for tool, package in ((PROTOC, "protobuf-compiler"), (PLUGIN, "protobuf-compiler-grpc")):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} not found (Debian package {package})")
    srcs = [f"jobwheel/v1/{p}.proto" for p in PROTOS]
    for s in srcs:
        if not os.path.isfile(os.path.join(root, s)):
            raise RuntimeError(f"{os.path.join(root, s)} not found")
    os.makedirs(out_dir, exist_ok=True)
    cmd = [
        PROTOC,
        f"-I{root}",
        "-I/usr/include",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--plugin=protoc-gen-grpc_python={PLUGIN}",
        *srcs,
    ]
    subprocess.run(cmd, check=True)
    out = []
    for p in PROTOS:
        for suffix in ("_pb2.py", "_pb2_grpc.py"):
            out.append(os.path.join(out_dir, "jobwheel", "v1", p + suffix))
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2 or len(argv) > 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        generate(argv[1], argv[2] if len(argv) == 3 else None)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"gen_stubs: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
