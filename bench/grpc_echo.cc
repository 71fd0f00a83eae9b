// The raw gRPC reference of the benchmark: a byte-echo server (callback generic API, no
// protobuf, no auth, no work) and a client measuring the unary round-trip rate against it.
//
//   grpc_echo --mode=server --listen=127.0.0.1:0 --port_file=/tmp/p
//   grpc_echo --mode=client --target=127.0.0.1:PORT --duration=5s --concurrency=64
//       prints "grpc_echo: calls=N seconds=S calls_per_s=R p50_us=.. p99_us=.. errors=E"
//   grpc_echo --mode=client --target=... --interval=100ms --duration=10s
//       paced: one call every interval (latency, not rate)
//
// --keep_warm (server mode) runs jobwheel::GrpcKeepWarm; paced probes about a second apart
// (--interval=1s) show what it is for: without it some take ~100 ms (docs/performance.md).
// --blocker keeps a synchronous server-streaming call open in the server process (as the
// SDK's heartbeat reader does), for experiments.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc/grpc_keep_warm.h"
#include "common/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"

ABSL_FLAG(std::string, mode, "client", "server or client");
ABSL_FLAG(std::string, listen, "127.0.0.1:0", "server: listen address");
ABSL_FLAG(std::string, port_file, "", "server: write the bound port here");
ABSL_FLAG(bool, blocker, false, "server: keep a synchronous stream read blocked in-process");
ABSL_FLAG(bool, keep_warm, false, "run jobwheel::GrpcKeepWarm (see its header)");
ABSL_FLAG(std::string, target, "", "client: server address");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(5), "client: how long to run");
ABSL_FLAG(int, concurrency, 64, "client: calls in flight (closed loop)");
ABSL_FLAG(int, payload_bytes, 200, "client: request size (about a RunRequest)");
ABSL_FLAG(absl::Duration, interval, absl::ZeroDuration(),
          "client: when set, one call per interval (latency probe) instead of a closed loop");

namespace {

constexpr char kMethod[] = "/jobwheel.bench.Echo/Echo";

class EchoService : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Reactor : public grpc::ServerGenericBidiReactor {
     public:
      Reactor() { StartRead(&buffer_); }
      void OnReadDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::OK);
          return;
        }
        StartWriteAndFinish(&buffer_, grpc::WriteOptions(), grpc::Status::OK);
      }
      void OnDone() override { delete this; }

     private:
      grpc::ByteBuffer buffer_;
    };
    return new Reactor;
  }
};

int Server() {
  EchoService service;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen), grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "grpc_echo: cannot listen on %s\n", absl::GetFlag(FLAGS_listen).c_str());
    return 1;
  }
  if (!absl::GetFlag(FLAGS_port_file).empty()) {
    std::ofstream(absl::GetFlag(FLAGS_port_file)) << port << "\n";
  }
  std::unique_ptr<jobwheel::GrpcKeepWarm> warm;
  if (absl::GetFlag(FLAGS_keep_warm)) {
    warm = std::make_unique<jobwheel::GrpcKeepWarm>(
        server->InProcessChannel(grpc::ChannelArguments()));
    warm->Start();
  }
  std::thread blocker;
  if (absl::GetFlag(FLAGS_blocker)) {
    blocker = std::thread([port] {
      auto channel =
          grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
      auto stub = grpc::health::v1::Health::NewStub(channel);
      grpc::ClientContext ctx;
      grpc::health::v1::HealthCheckRequest request;
      auto reader = stub->Watch(&ctx, request);
      grpc::health::v1::HealthCheckResponse response;
      while (reader->Read(&response)) {
      }
    });
    blocker.detach();
    // Something arrives on the blocked stream every second, as heartbeat acks do.
    std::thread toggler([&server] {
      for (bool serving = false;; serving = !serving) {
        absl::SleepFor(absl::Seconds(1));
        server->GetHealthCheckService()->SetServingStatus(serving);
      }
    });
    toggler.detach();
  }
  server->Wait();
  return 0;
}

int Client() {
  auto channel =
      grpc::CreateChannel(absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(
          absl::ToChronoTime(jobwheel::RealClock::Get().Now() + absl::Seconds(10)))) {
    std::fprintf(stderr, "grpc_echo: cannot connect to %s\n", absl::GetFlag(FLAGS_target).c_str());
    return 1;
  }
  grpc::GenericStub stub(channel);
  // The client's own callback completions run on the same kind of threads.
  std::unique_ptr<jobwheel::GrpcKeepWarm> warm;
  if (absl::GetFlag(FLAGS_keep_warm)) {
    warm = std::make_unique<jobwheel::GrpcKeepWarm>(channel);
    warm->Start();
  }
  const std::string payload(absl::GetFlag(FLAGS_payload_bytes), 'x');
  const grpc::Slice slice(payload);
  const absl::Duration duration = absl::GetFlag(FLAGS_duration);
  const absl::Duration interval = absl::GetFlag(FLAGS_interval);

  absl::Mutex mu;
  std::vector<int64_t> latencies_us;  // Guarded by mu.
  int64_t errors = 0;                 // Guarded by mu.
  std::atomic<bool> stop{false};
  const absl::Time start = jobwheel::RealClock::Get().Now();

  struct Call {
    grpc::ClientContext ctx;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
    absl::Time sent;
  };
  // Issues one call; on completion records it and, in closed-loop mode, issues the next.
  std::function<void()> issue;
  absl::Mutex done_mu;
  int in_flight = 0;  // Guarded by done_mu.
  issue = [&] {
    auto* call = new Call;
    call->request = grpc::ByteBuffer(&slice, 1);
    call->ctx.set_deadline(absl::ToChronoTime(jobwheel::RealClock::Get().Now() + absl::Seconds(5)));
    call->sent = jobwheel::RealClock::Get().Now();
    {
      absl::MutexLock lock(&done_mu);
      ++in_flight;
    }
    stub.UnaryCall(&call->ctx, kMethod, grpc::StubOptions(), &call->request, &call->response,
                   [&, call](grpc::Status s) {
                     const absl::Time now = jobwheel::RealClock::Get().Now();
                     {
                       absl::MutexLock lock(&mu);
                       if (s.ok()) {
                         latencies_us.push_back(absl::ToInt64Microseconds(now - call->sent));
                       } else {
                         ++errors;
                       }
                     }
                     delete call;
                     if (interval == absl::ZeroDuration() && !stop.load()) issue();
                     absl::MutexLock lock(&done_mu);
                     --in_flight;
                   });
  };
  if (interval == absl::ZeroDuration()) {
    for (int i = 0; i < absl::GetFlag(FLAGS_concurrency); ++i) issue();
    absl::SleepFor(duration);
  } else {
    for (absl::Time next = start; jobwheel::RealClock::Get().Now() < start + duration;
         next += interval) {
      absl::SleepFor(next - jobwheel::RealClock::Get().Now());
      issue();
    }
  }
  stop.store(true);
  const absl::Duration elapsed = jobwheel::RealClock::Get().Now() - start;
  {
    absl::MutexLock lock(&done_mu);
    auto drained = [&in_flight]() { return in_flight == 0; };
    done_mu.AwaitWithTimeout(absl::Condition(&drained), absl::Seconds(10));
  }
  absl::MutexLock lock(&mu);
  std::sort(latencies_us.begin(), latencies_us.end());
  auto pct = [&](double p) -> int64_t {
    if (latencies_us.empty()) return 0;
    return latencies_us[std::min(latencies_us.size() - 1,
                                 static_cast<size_t>(p * latencies_us.size()))];
  };
  const double seconds = absl::ToDoubleSeconds(elapsed);
  std::printf(
      "grpc_echo: calls=%zu seconds=%.2f calls_per_s=%.0f p50_us=%lld p90_us=%lld p99_us=%lld "
      "max_us=%lld errors=%lld\n",
      latencies_us.size(), seconds, latencies_us.size() / seconds, static_cast<long long>(pct(0.5)),
      static_cast<long long>(pct(0.9)), static_cast<long long>(pct(0.99)),
      static_cast<long long>(latencies_us.empty() ? 0 : latencies_us.back()),
      static_cast<long long>(errors));
  return errors > 0 && latencies_us.empty() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return absl::GetFlag(FLAGS_mode) == "server" ? Server() : Client();
}
