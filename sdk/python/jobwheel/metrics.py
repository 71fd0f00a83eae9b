"""The executor's Prometheus metrics (the C++ SDK's names) and a small text-exposition server.

jobwheel_executor_runs_total{status}, jobwheel_executor_run_duration_seconds,
jobwheel_executor_queue_depth, jobwheel_executor_running, jobwheel_executor_spool_size,
jobwheel_executor_results_refused_total, jobwheel_executor_heartbeat_connected.
Thread-safe.
"""

from __future__ import annotations

import bisect
import http.server
import threading

RUN_STATUSES = ("succeeded", "failed", "timed_out", "killed", "discarded")
DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800, 7200)


class ExecutorMetrics:
    def __init__(self) -> None:
        self._mu = threading.Lock()
        self.runs_total: dict[str, float] = {s: 0.0 for s in RUN_STATUSES}
        self.queue_depth = 0.0
        self.running = 0.0
        self.spool_size = 0.0
        self.results_refused = 0.0
        self.heartbeat_connected = 0.0
        self._buckets = [0] * (len(DURATION_BUCKETS) + 1)
        self._duration_sum = 0.0
        self._duration_count = 0

    def run_finished(self, status: str) -> None:
        with self._mu:
            self.runs_total[status] = self.runs_total.get(status, 0.0) + 1

    def observe_duration(self, seconds: float) -> None:
        with self._mu:
            self._buckets[bisect.bisect_left(DURATION_BUCKETS, seconds)] += 1
            self._duration_sum += seconds
            self._duration_count += 1

    def set(self, name: str, value: float) -> None:
        with self._mu:
            setattr(self, name, float(value))

    def refused(self) -> None:
        with self._mu:
            self.results_refused += 1

    def exposition(self) -> str:
        with self._mu:
            out = [
                "# HELP jobwheel_executor_runs_total Runs finished on this executor",
                "# TYPE jobwheel_executor_runs_total counter",
            ]
            for status, v in sorted(self.runs_total.items()):
                out.append(f'jobwheel_executor_runs_total{{status="{status}"}} {v:g}')
            out += [
                "# HELP jobwheel_executor_run_duration_seconds Handler run time",
                "# TYPE jobwheel_executor_run_duration_seconds histogram",
            ]
            cum = 0
            for bound, n in zip(DURATION_BUCKETS, self._buckets):
                cum += n
                out.append(f'jobwheel_executor_run_duration_seconds_bucket{{le="{bound:g}"}} {cum}')
            cum += self._buckets[-1]
            out.append(f'jobwheel_executor_run_duration_seconds_bucket{{le="+Inf"}} {cum}')
            out.append(f"jobwheel_executor_run_duration_seconds_sum {self._duration_sum:g}")
            out.append(f"jobwheel_executor_run_duration_seconds_count {self._duration_count}")
            for name, kind, help_text, value in (
                ("queue_depth", "gauge", "Runs queued behind running ones", self.queue_depth),
                ("running", "gauge", "Runs executing now", self.running),
                ("spool_size", "gauge", "Results spooled, not yet acknowledged", self.spool_size),
                (
                    "results_refused_total",
                    "counter",
                    "Results the dispatcher refused for good (no such run, or a missing or "
                    "wrong result key), dropped from the spool",
                    self.results_refused,
                ),
                (
                    "heartbeat_connected",
                    "gauge",
                    "1 while the registry stream is up",
                    self.heartbeat_connected,
                ),
            ):
                out.append(f"# HELP jobwheel_executor_{name} {help_text}")
                out.append(f"# TYPE jobwheel_executor_{name} {kind}")
                out.append(f"jobwheel_executor_{name} {value:g}")
            return "\n".join(out) + "\n"


class MetricsServer:
    """GET /metrics on host:port (port 0 picks one), in a daemon thread."""

    def __init__(self, metrics: ExecutorMetrics, address: str) -> None:
        host, _, port = address.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        m = metrics

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404, "only /metrics here")
                    return
                body = m.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self._server = http.server.ThreadingHTTPServer((host, int(port)), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="jobwheel-metrics", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
