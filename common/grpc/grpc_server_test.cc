// StartGrpcServer's limits seen from a real client over TCP: an oversized request is refused
// and the server keeps answering; a client pinging too often is sent away.
#include "common/grpc/grpc_server.h"

#include <string>

#include "absl/synchronization/notification.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

std::unique_ptr<grpc::Server> Start(const ServerLimits& limits, int* port) {
  auto server = StartGrpcServer("127.0.0.1:0", {}, {}, port, limits);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::chrono::system_clock::time_point In(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

grpc::Status Check(Health::Stub& stub, const std::string& service) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(5));
  HealthCheckRequest req;
  req.set_service(service);
  HealthCheckResponse resp;
  return stub.Check(&ctx, req, &resp);
}

TEST(GrpcServerTest, RefusesAnOversizedRequestAndKeepsAnswering) {
  ServerLimits limits;
  limits.max_receive_message_bytes = 1024;
  int port = 0;
  auto server = Start(limits, &port);
  ASSERT_NE(server, nullptr);
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto stub = Health::NewStub(channel);

  // A well-formed request just over the limit, and raw junk far over it.
  EXPECT_EQ(Check(*stub, std::string(2000, 'x')).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  grpc::GenericStub generic(channel);
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(5));
    const std::string junk(1 << 20, '\x7f');
    grpc::Slice slice(junk);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    absl::Notification done;
    grpc::Status status;
    generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                      &response, [&](grpc::Status s) {
                        status = std::move(s);
                        done.Notify();
                      });
    done.WaitForNotification();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  }
  // Same connection, still serving.
  EXPECT_TRUE(Check(*stub, "").ok());
  // Under the limit: parsed and answered (an unknown service name).
  grpc::Status under = Check(*stub, std::string(500, 'y'));
  EXPECT_NE(under.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << under.error_message();
  EXPECT_NE(under.error_code(), grpc::StatusCode::UNAVAILABLE) << under.error_message();
  server->Shutdown();
}

TEST(GrpcServerTest, AClientPingingTooOftenIsSentAway) {
  int port = 0;
  auto server = Start(ServerLimits{}, &port);
  ASSERT_NE(server, nullptr);
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 50);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, 50);
  auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                           grpc::InsecureChannelCredentials(), args);
  auto stub = Health::NewStub(channel);
  ASSERT_TRUE(Check(*stub, "").ok());
  ASSERT_EQ(channel->GetState(false), GRPC_CHANNEL_READY);
  // Idle pings every 50 ms against a 5 s minimum: the third strike closes the connection
  // (GOAWAY too_many_pings), which the channel sees as leaving READY.
  EXPECT_TRUE(channel->WaitForStateChange(GRPC_CHANNEL_READY, In(10)));
  EXPECT_NE(channel->GetState(false), GRPC_CHANNEL_READY);
  server->Shutdown();
}

}  // namespace
}  // namespace jobwheel
