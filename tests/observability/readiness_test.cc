// A dispatcher started while its registry is down answers grpc.health.v1 NOT_SERVING (it knows
// no executor) though its database is fine; once the registry serves and the first snapshot
// arrives it answers SERVING; on SIGTERM it answers NOT_SERVING for --drain_delay, still alive,
// before it exits. The liveness name answers SERVING throughout.
#include "common/server/readiness.h"

#include <signal.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace jobwheel::testing {
namespace {

constexpr char kDispatcherService[] = "jobwheel.v1.DispatcherService";
constexpr absl::Duration kTimeout = absl::Seconds(30);

// "SERVING", "NOT_SERVING", ... or "error: <message>" as `target` answers for `service`.
std::string HealthOf(const std::string& target, const std::string& service) {
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status s = stub->Check(&ctx, req, &resp);
  if (!s.ok()) return absl::StrCat("error: ", s.error_message());
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
}

bool HealthBecomes(const std::string& target, const std::string& service, const std::string& status,
                   absl::Duration timeout) {
  return Eventually([&] { return HealthOf(target, service) == status; }, timeout);
}

TEST(ReadinessTest, DispatcherServesOnlyWithARegistrySnapshotAndStopsServingWhenDraining) {
  Stack::Options o;
  o.registry.start_later = true;
  o.dispatcher.start_later = true;
  o.scheduler.replicas = 0;
  o.registry.extra_flags = {"--drain_delay=5s"};
  o.dispatcher.extra_flags = {"--db_check_interval=200ms", "--db_check_timeout=1s",
                              "--drain_delay=5s"};
  o.serving_timeout = kTimeout;
  Stack stack(std::move(o));
  ASSERT_TRUE(stack.StartServices().ok()) << stack.Logs();

  // The dispatcher alone: it lives but is not ready, so Start waits for its liveness name.
  StackProcess& d = stack.dispatcher_process(0);
  d.health_service = kLivenessService;
  ASSERT_TRUE(stack.StartDispatcher(0).ok()) << stack.Logs();
  const std::string target = d.address();

  ASSERT_TRUE(HealthBecomes(target, kLivenessService, "SERVING", kTimeout))
      << HealthOf(target, kLivenessService) << "\n"
      << stack.Logs();
  // Its database is fine: the readiness says so in its log, and it still does not serve.
  ASSERT_TRUE(Eventually(
      [&] { return absl::StrContains(ReadFile(d.log), "readiness: database ready"); }, kTimeout))
      << stack.Logs();
  EXPECT_EQ(HealthOf(target, ""), "NOT_SERVING");
  EXPECT_EQ(HealthOf(target, kDispatcherService), "NOT_SERVING");
  EXPECT_TRUE(absl::StrContains(ReadFile(d.log), "registry_snapshot")) << ReadFile(d.log);

  // The registry comes up (Stack waits until it serves, i.e. its database check passed).
  ASSERT_TRUE(stack.StartRegistry(0).ok()) << stack.Logs();
  EXPECT_TRUE(HealthBecomes(target, "", "SERVING", kTimeout)) << HealthOf(target, "") << "\n"
                                                              << stack.Logs();
  EXPECT_EQ(HealthOf(target, kDispatcherService), "SERVING");
  EXPECT_EQ(HealthOf(stack.registry(0), "jobwheel.v1.RegistryService"), "SERVING");

  // SIGTERM: NOT_SERVING while it drains, the process still up and live.
  d.proc->Signal(SIGTERM);
  EXPECT_TRUE(HealthBecomes(target, "", "NOT_SERVING", absl::Seconds(4)))
      << HealthOf(target, "") << "\n"
      << stack.Logs();
  EXPECT_EQ(HealthOf(target, kDispatcherService), "NOT_SERVING");
  EXPECT_EQ(HealthOf(target, kLivenessService), "SERVING");
  EXPECT_TRUE(d.proc->running());
  int exit_code = -1;
  ASSERT_TRUE(d.proc->Wait(absl::Seconds(20), &exit_code).ok()) << stack.Logs();
  EXPECT_EQ(exit_code, 0);

  // The registry drains the same way.
  StackProcess& r = stack.registry_process(0);
  r.proc->Signal(SIGTERM);
  EXPECT_TRUE(HealthBecomes(stack.registry(0), "", "NOT_SERVING", absl::Seconds(4)))
      << HealthOf(stack.registry(0), "") << "\n"
      << stack.Logs();
}

}  // namespace
}  // namespace jobwheel::testing
