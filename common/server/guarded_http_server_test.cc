#include "common/server/guarded_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

// A TCP connection to 127.0.0.1:port from `source` (any 127/8 address works on loopback).
int Connect(int port, const char* source = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) return -1;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) return -1;
  return fd;
}

// Everything the server sends until it closes or `limit` passes.
std::string ReadAll(int fd, absl::Duration limit = absl::Seconds(5)) {
  std::string out;
  const absl::Time end = absl::Now() + limit;
  char buf[4096];
  while (absl::Now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

void Send(int fd, const std::string& s) {
  ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
}

class GuardedHttpServerTest : public ::testing::Test {
 protected:
  void Start(GuardedHttpServer::Config options) {
    server_ = std::make_unique<GuardedHttpServer>(
        options,
        [this](const std::string& client, const absl::Status&) {
          if (client == "127.0.0.1") ++refused_;
        },
        RealClock::Get());
    server_->Get("/x", [](const httplib::Request& req, httplib::Response& res) {
      GuardedHttpServer::Connection* conn = GuardedHttpServer::Current();
      res.set_content(conn != nullptr ? conn->client() : "none", "text/plain");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void TearDown() override {
    if (server_ != nullptr) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  std::unique_ptr<GuardedHttpServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> refused_{0};
};

TEST_F(GuardedHttpServerTest, AClientOverItsCapIsRefusedAtOnceWhileOthersAreServed) {
  GuardedHttpServer::Config o;
  o.max_connections = 8;
  o.max_connections_per_client = 2;
  Start(o);
  std::vector<int> held;
  for (int i = 0; i < 2; ++i) held.push_back(Connect(port_));
  // The accept loop admits in order; wait until both are counted.
  const absl::Time end = absl::Now() + absl::Seconds(5);
  while (server_->admission().open("127.0.0.1") < 2 && absl::Now() < end)
    absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(server_->admission().open("127.0.0.1"), 2);

  const int third = Connect(port_);
  ASSERT_GE(third, 0);
  const absl::Time before = absl::Now();
  const std::string refused = ReadAll(third);
  EXPECT_LT(absl::Now() - before, absl::Seconds(1));
  EXPECT_TRUE(absl::StartsWith(refused, "HTTP/1.1 503")) << refused;
  EXPECT_EQ(refused_.load(), 1);
  ::close(third);

  const int other = Connect(port_, "127.0.0.2");
  ASSERT_GE(other, 0);
  Send(other, "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const std::string answer = ReadAll(other);
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 200")) << answer;
  EXPECT_TRUE(absl::EndsWith(answer, "127.0.0.2")) << answer;
  ::close(other);
  for (int fd : held) ::close(fd);
}

TEST_F(GuardedHttpServerTest, ARequestTricklingInPastItsDeadlineIsCutOff) {
  GuardedHttpServer::Config o;
  o.limits.request_deadline = absl::Milliseconds(500);
  Start(o);
  const int fd = Connect(port_);
  ASSERT_GE(fd, 0);
  const absl::Time start = absl::Now();
  const std::string request =
      "GET /x HTTP/1.1\r\nHost: a\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
  bool closed = false;
  for (char c : request) {
    if (::send(fd, &c, 1, MSG_NOSIGNAL) != 1) {
      closed = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      closed = true;
      break;
    }
  }
  EXPECT_TRUE(closed);
  // Answered (408 or nothing) and closed about when the deadline passed, not at the end.
  (void)ReadAll(fd, absl::Seconds(2));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  ::close(fd);
  const absl::Time end = absl::Now() + absl::Seconds(2);
  while (server_->admission().open() > 0 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(server_->admission().open(), 0);
}

TEST_F(GuardedHttpServerTest, IdleKeepAliveConnectionsAreClosed) {
  GuardedHttpServer::Config o;
  o.keep_alive_timeout = absl::Seconds(1);
  Start(o);
  const int fd = Connect(port_);
  ASSERT_GE(fd, 0);
  Send(fd, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
  const absl::Time start = absl::Now();
  const std::string answer = ReadAll(fd, absl::Seconds(4));
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 200")) << answer;
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));  // Closed by the server after ~1 s idle.
  ::close(fd);
}

}  // namespace
}  // namespace jobwheel
