#include "common/server/http_listener.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace jobwheel {
namespace {

TEST(HttpListenerTest, ParsesTheListenAddressAndNamesTheFlag) {
  for (const char* bad : {"7190", ":7190", "127.0.0.1:", "127.0.0.1:70000", "127.1:80", "a b:80"}) {
    httplib::Server server;
    HttpListener listener;
    absl::StatusOr<int> port = listener.Start(server, bad, "--listen");
    EXPECT_TRUE(absl::IsInvalidArgument(port.status())) << bad << ": " << port.status();
    EXPECT_TRUE(absl::StrContains(port.status().message(), "--listen")) << port.status();
  }
}

TEST(HttpListenerTest, PortZeroBindsAFreePortThatServes) {
  httplib::Server server;
  server.Get("/x", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  HttpListener listener;
  absl::StatusOr<int> port = listener.Start(server, "127.0.0.1:0", "--listen");
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT(*port, 0);
  httplib::Client client("127.0.0.1", *port);
  auto res = client.Get("/x");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "ok");
  listener.Stop();
}

}  // namespace
}  // namespace jobwheel
