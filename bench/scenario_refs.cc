// The references, measured on the same machine in the same run: pgbench simple-update tps
// against the same PostgreSQL, and the raw gRPC unary round-trip rate (bench/grpc_echo).
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "bench/sampling.h"
#include "bench/scenario.h"
#include "common/testing/process.h"

namespace jobwheel::bench {
namespace {

// pgbench simple-update (-N): UPDATE pgbench_accounts, SELECT, INSERT pgbench_history per
// transaction; 8 clients, 2 threads, 10 s.
absl::Status PgBench(Context& ctx) {
  const BenchOptions& o = ctx.options;
  const std::string log = o.work_dir + "/pgbench.log";
  const std::string init =
      absl::StrCat(o.pgbench, " -i -s 5 -q '", o.pgbench_dsn, "' > ", log, " 2>&1");
  const std::string run =
      absl::StrCat(o.pgbench, " -N -n -c 8 -j 2 -T 10 '", o.pgbench_dsn, "' >> ", log, " 2>&1");
  if (std::system(init.c_str()) != 0 || std::system(run.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("pgbench failed; see ", log));
  }
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view v(line);
    if (absl::ConsumePrefix(&v, "tps = ")) {
      (void)absl::SimpleAtod(v.substr(0, v.find(' ')), &ctx.pgbench_tps);
    }
  }
  Report r;
  r.Add("tps", ctx.pgbench_tps, 0);
  r.AddText("mode", "simple-update -N, 8 clients, 2 threads, 10 s, scale 5");
  r.AddText("load_avg", LoadAvg());
  ctx.results.Emit("ref_pgbench", r);
  return absl::OkStatus();
}

// Raw gRPC: 64 calls in flight against a byte-echo server, 5 s.
absl::Status GrpcEcho(Context& ctx) {
  const BenchOptions& o = ctx.options;
  testing::Process server;
  const std::string port_file = o.work_dir + "/echo.port";
  std::remove(port_file.c_str());
  absl::Status st =
      server.Start(o.bin_dir + "/bench/grpc_echo", {"--mode=server", "--port_file=" + port_file},
                   o.work_dir + "/echo_server.log");
  if (!st.ok()) return st;
  std::ofstream(o.work_dir + "/pids", std::ios::app) << server.pid() << "\n";
  if (!testing::Eventually([&] { return std::ifstream(port_file).good(); }, absl::Seconds(10))) {
    server.Kill();
    return absl::DeadlineExceededError("grpc_echo server: no port file within 10s");
  }
  absl::SleepFor(absl::Milliseconds(200));
  int port = 0;
  std::ifstream(port_file) >> port;
  const std::string log = o.work_dir + "/echo_client.log";
  const std::string cmd =
      absl::StrCat(o.bin_dir, "/bench/grpc_echo --mode=client --target=127.0.0.1:", port,
                   " --duration=5s --concurrency=64 > ", log, " 2>&1");
  const int rc = std::system(cmd.c_str());
  server.Signal(SIGTERM);
  if (!server.Wait(absl::Seconds(5)).ok()) server.Kill();
  if (rc != 0) return absl::InternalError(absl::StrCat("grpc_echo client failed; see ", log));
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (absl::string_view kv : absl::StrSplit(text, absl::ByAnyChar(" \n"))) {
    if (absl::ConsumePrefix(&kv, "calls_per_s=")) {
      (void)absl::SimpleAtod(kv, &ctx.grpc_calls_per_s);
    }
  }
  Report r;
  r.Add("calls_per_s", ctx.grpc_calls_per_s, 0);
  r.AddText("mode", "unary byte echo, callback API, 64 in flight, 200-byte payload, 5 s");
  r.AddText("load_avg", LoadAvg());
  ctx.results.Emit("ref_grpc", r);
  return absl::OkStatus();
}

}  // namespace

absl::Status RunRefs(Context& ctx) {
  if (!ctx.options.pgbench_dsn.empty()) {
    absl::Status st = PgBench(ctx);
    if (!st.ok()) return st;
  }
  return GrpcEcho(ctx);
}

}  // namespace jobwheel::bench
