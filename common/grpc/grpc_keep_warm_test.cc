#include "common/grpc/grpc_keep_warm.h"

#include "absl/time/clock.h"
#include "common/testing/process.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

using ::jobwheel::testing::Eventually;

TEST(GrpcKeepWarmTest, CallsTheServerPeriodicallyAndStopsCleanly) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  GrpcKeepWarm warm(server->InProcessChannel(grpc::ChannelArguments()), absl::Milliseconds(20));
  warm.Start();
  EXPECT_TRUE(Eventually([&] { return warm.calls() >= 5; }, absl::Seconds(5)));
  warm.Shutdown();
  const int64_t after = warm.calls();
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(warm.calls(), after);  // Nothing runs after Shutdown.
  warm.Shutdown();                 // Idempotent.
  server->Shutdown();
}

TEST(GrpcKeepWarmTest, ShutdownWithoutStartIsFine) {
  grpc::ServerBuilder builder;
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  GrpcKeepWarm warm(server->InProcessChannel(grpc::ChannelArguments()));
  warm.Shutdown();
  EXPECT_EQ(warm.calls(), 0);
}

}  // namespace
}  // namespace jobwheel
