"""jobwheel: the Python executor SDK.

    from jobwheel import Executor, JobContext

    ex = Executor(app="billing", registry="10.0.0.5:7101", dispatcher="10.0.0.6:7102",
                  token_file="/etc/jobwheel/executor",
                  dispatcher_public_keys="/etc/jobwheel/dispatcher.pub",
                  scheduler_public_keys="/etc/jobwheel/scheduler.pub")

    @ex.handler("settle")
    def settle(ctx: JobContext) -> str:
        ctx.log.info("shard %d/%d", ctx.shard_index, ctx.shard_total)
        return "settled"

    ex.run()

See docs/sdk-python.md. The generated gRPC stubs live in the subpackage `jobwheel.v1`, built
from proto/ (gen_stubs.py); they may sit in another directory on sys.path.
"""

from __future__ import annotations

import pkgutil

# The generated jobwheel.v1 stubs may live in another sys.path entry (a build directory).
__path__ = pkgutil.extend_path(__path__, __name__)

from jobwheel.context import Cancelled, JobContext, current_context  # noqa: E402
from jobwheel.executor import Executor, ExecutorOptions  # noqa: E402
from jobwheel.version import SDK_VERSION  # noqa: E402

__all__ = [
    "Cancelled",
    "Executor",
    "ExecutorOptions",
    "JobContext",
    "SDK_VERSION",
    "current_context",
]
