#!/usr/bin/python3
"""The Python demo executor (app demo-py): handlers echo, sleep, fail, shard and flaky.

    /usr/bin/python3 sdk/python/examples/demo_executor.py --insecure_dev
    /usr/bin/python3 sdk/python/examples/demo_executor.py --listen=127.0.0.1:7210 \\
        --executor_token_file=.data/tokens/executor \\
        --dispatcher_public_key_file=.data/tokens/dispatcher.pub \\
        --scheduler_public_key_file=.data/tokens/scheduler.pub

Every flag may also come from JOBWHEEL_<FLAG> in the environment (not --insecure_dev). The
generated stubs must be importable: pip install ./sdk/python, or --stubs_dir=DIR (a directory
gen_stubs.py or the Bazel target //sdk/python:jobwheel_pb2 filled). With --record_file, every
execution appends "run_id pid handler job_id fire_id scheduled_us received_us" to that file
(tests count executions with it; the Python SDK bench measures lateness with it).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse(argv: list[str]) -> argparse.Namespace:
    def env(name: str, default: str) -> str:
        return os.environ.get("JOBWHEEL_" + name.upper(), default)

    p = argparse.ArgumentParser(description="jobwheel Python demo executor")
    p.add_argument("--listen", default=env("listen", "127.0.0.1:7210"))
    p.add_argument("--advertise_address", default=env("advertise_address", ""))
    p.add_argument("--app", default=env("app", "demo-py"))
    p.add_argument("--registry_target", default=env("registry_target", "127.0.0.1:7101"))
    p.add_argument("--dispatcher_target", default=env("dispatcher_target", "127.0.0.1:7102"))
    p.add_argument("--executor_token_file", default=env("executor_token_file", ""))
    p.add_argument("--dispatcher_public_key_file", default=env("dispatcher_public_key_file", ""))
    p.add_argument("--scheduler_public_key_file", default=env("scheduler_public_key_file", ""))
    p.add_argument("--log_dir", default=env("log_dir", ""))
    p.add_argument("--spool_dir", default=env("spool_dir", ""))
    p.add_argument("--metrics_address", default=env("metrics_address", ""))
    p.add_argument("--grace_period", type=float, default=float(env("grace_period", "10")))
    p.add_argument("--capacity", type=int, default=int(env("capacity", "16")))
    p.add_argument("--record_file", default=env("record_file", ""))
    p.add_argument("--stubs_dir", default=env("stubs_dir", ""))
    p.add_argument("--log_level", default=env("log_level", "info"))
    p.add_argument("--insecure_dev", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    if os.environ.get("JOBWHEEL_INSECURE_DEV"):
        print(
            "JOBWHEEL_INSECURE_DEV is set, but --insecure_dev is taken only from the command line",
            file=sys.stderr,
        )
        return 2
    if args.stubs_dir:
        sys.path.insert(0, args.stubs_dir)
    sys.path.insert(0, os.path.dirname(HERE))  # The package next to this example.
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        from jobwheel import Executor, JobContext
    except ImportError as e:
        print(f"demo_executor: {e} (python: {sys.executable})", file=sys.stderr)
        return 2

    port = args.listen.rpartition(":")[2]
    base = f"/tmp/jobwheel-executor-py-{port}"
    ex = Executor(
        app=args.app,
        registry=args.registry_target,
        dispatcher=args.dispatcher_target,
        token_file=args.executor_token_file,
        dispatcher_public_keys=args.dispatcher_public_key_file,
        scheduler_public_keys=args.scheduler_public_key_file,
        log_dir=args.log_dir or f"{base}/logs",
        spool_dir=args.spool_dir or f"{base}/spool",
        listen=args.listen,
        advertise=args.advertise_address,
        insecure_dev=args.insecure_dev,
        metrics_address=args.metrics_address,
        grace_period=args.grace_period,
        capacity=args.capacity,
    )

    # Opened once; each record is one short O_APPEND write, so lines of several executors
    # sharing the file never interleave, and a record is in the file before the handler
    # returns (a kill -9 loses none).
    record_fd = (
        os.open(args.record_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        if args.record_file
        else -1
    )

    def record(ctx: JobContext) -> None:
        if record_fd >= 0:
            received_us = int(time.time() * 1e6)
            scheduled_us = int((ctx.scheduled_time or 0) * 1e6)
            line = (
                f"{ctx.run_id} {os.getpid()} {ctx.handler} {ctx.job_id} {ctx.fire_id} "
                f"{scheduled_us} {received_us}\n"
            )
            os.write(record_fd, line.encode())

    @ex.handler("echo")
    def echo(ctx: JobContext) -> str:
        record(ctx)
        ctx.log.info("echo: %s", ctx.param)
        return ctx.param

    @ex.handler("sleep")
    async def sleep(ctx: JobContext) -> str:
        record(ctx)
        ms = int(ctx.param or "1000")
        ctx.log.info("sleeping %d ms", ms)
        if await ctx.wait_cancelled_async(ms / 1000):
            raise ctx.Cancelled()
        return f"slept {ms} ms"

    @ex.handler("fail")
    def fail(ctx: JobContext) -> str:
        record(ctx)
        raise RuntimeError(f"failing as asked ({ctx.param})")

    @ex.handler("shard")
    def shard(ctx: JobContext) -> str:
        record(ctx)
        ctx.log.info("shard %d/%d", ctx.shard_index, ctx.shard_total)
        return f"shard {ctx.shard_index}/{ctx.shard_total}"

    @ex.handler("flaky")
    def flaky(ctx: JobContext) -> str:
        record(ctx)
        if ctx.attempt < int(ctx.param or "1"):
            raise RuntimeError(f"attempt {ctx.attempt} fails")
        return f"attempt {ctx.attempt} succeeded"

    try:
        ex.run()
    except (ValueError, PermissionError, RuntimeError) as e:
        print(f"demo_executor: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
