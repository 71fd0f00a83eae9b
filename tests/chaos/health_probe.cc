// health_probe: asks each target's grpc.health.v1.Health/Check (service --service, default "",
// the whole server's readiness; "liveness" where a server reports it) once, with a
// deadline, and prints one line per target. Exit 0 when every target answered SERVING, 1 when
// any did not, 2 on bad usage. The chaos suite uses it to show that services keep answering
// health checks while PostgreSQL is down.
//
//   health_probe [--timeout=2s] [--service=NAME] 127.0.0.1:7101 127.0.0.1:7102 ...
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

ABSL_FLAG(absl::Duration, timeout, absl::Seconds(2), "Deadline of each Check call");
ABSL_FLAG(std::string, service, "", "HealthCheckRequest.service of each Check call");

int main(int argc, char** argv) {
  std::vector<char*> targets = absl::ParseCommandLine(argc, argv);
  if (targets.size() < 2) {
    std::cerr << "usage: health_probe [--timeout=2s] [--service=NAME] HOST:PORT...\n";
    return 2;
  }
  const absl::Duration timeout = absl::GetFlag(FLAGS_timeout);
  jobwheel::Clock& clock = jobwheel::RealClock::Get();
  int failed = 0;
  for (size_t i = 1; i < targets.size(); ++i) {
    const std::string target = targets[i];
    auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(clock.Now() + timeout));
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(absl::GetFlag(FLAGS_service));
    grpc::health::v1::HealthCheckResponse resp;
    const absl::Time start = clock.Now();
    grpc::Status s = stub->Check(&ctx, req, &resp);
    const double ms = absl::ToDoubleMilliseconds(clock.Now() - start);
    if (s.ok() && resp.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      std::cout << target << " SERVING (" << ms << " ms)\n";
    } else {
      ++failed;
      std::cout << target << " "
                << (s.ok()
                        ? grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status())
                        : "error " + std::to_string(s.error_code()) + " " + s.error_message())
                << " (" << ms << " ms)\n";
    }
  }
  return failed == 0 ? 0 : 1;
}
