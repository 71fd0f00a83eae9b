"""Installs the jobwheel package; the jobwheel.v1 stubs are generated from the repository's
proto/ (or JOBWHEEL_PROTO_ROOT) by protoc and grpc_python_plugin at build time, offline:

    pip install --no-index ./sdk/python
"""

from __future__ import annotations

import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithStubs(build_py):
    def run(self) -> None:
        super().run()
        sys.path.insert(0, HERE)
        import gen_stubs

        root = os.environ.get("JOBWHEEL_PROTO_ROOT") or gen_stubs.default_proto_root()
        gen_stubs.generate(self.build_lib, root)
        v1 = os.path.join(self.build_lib, "jobwheel", "v1")
        open(os.path.join(v1, "__init__.py"), "a").close()


setup(
    name="jobwheel",
    version="0.1.0",
    description="jobwheel executor SDK for Python",
    packages=["jobwheel"],
    python_requires=">=3.11",
    install_requires=["grpcio", "protobuf", "cryptography"],
    cmdclass={"build_py": BuildWithStubs},
)
