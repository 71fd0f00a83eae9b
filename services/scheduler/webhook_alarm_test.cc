#include "services/scheduler/webhook_alarm.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "gtest/gtest.h"

namespace jobwheel::scheduler {
namespace {

TEST(WebhookAlarmTest, RejectsNonHttpUrls) {
  SimulatedClock clock;
  EXPECT_EQ(WebhookAlarm::Create("ftp://x", clock).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WebhookAlarm::Create("http://", clock).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WebhookAlarm::Create("http://h:99999/", clock).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(WebhookAlarmTest, AllowlistAdmitsOnlyListedHosts) {
  EXPECT_TRUE(WebhookAlarm::CheckAllowlist("http://hooks.example.com/x", "hooks.example.com").ok());
  EXPECT_TRUE(
      WebhookAlarm::CheckAllowlist("http://Hooks.Example.com:8080/x", "a.b, hooks.example.com:8080")
          .ok());
  EXPECT_TRUE(WebhookAlarm::CheckAllowlist("http://127.0.0.1:9/x", "127.0.0.1").ok());
  // Wrong port, other host, empty list, look-alike host.
  EXPECT_EQ(
      WebhookAlarm::CheckAllowlist("http://hooks.example.com:81/", "hooks.example.com:80").code(),
      absl::StatusCode::kFailedPrecondition);
  absl::Status s =
      WebhookAlarm::CheckAllowlist("http://169.254.169.254/latest", "hooks.example.com");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("169.254.169.254"), std::string::npos) << s;
  EXPECT_EQ(WebhookAlarm::CheckAllowlist("http://hooks.example.com/", "").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      WebhookAlarm::CheckAllowlist("http://hooks.example.com.evil.io/", "hooks.example.com").code(),
      absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(WebhookAlarm::CheckAllowlist("http://hooks.example.com@evil.io/", "evil.io").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WebhookAlarm::CheckAllowlist("http://h/", "h:notaport").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(WebhookAlarmTest, JsonEscapes) {
  AlarmEvent e;
  e.job_id = 3;
  e.run_id = 9;
  e.message = "bad \"quote\"\n";
  e.contacts = {"ops@example.com"};
  EXPECT_EQ(WebhookAlarm::ToJson(e),
            "{\"job_id\":3,\"job_name\":\"\",\"app\":\"\",\"run_id\":9,\"status\":\"\","
            "\"message\":\"bad \\\"quote\\\"\\n\",\"contacts\":[\"ops@example.com\"]}");
}

TEST(WebhookAlarmTest, PostsToARealListener) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  listen(fd, 1);
  std::string received;
  std::thread server([&] {
    int c = accept(fd, nullptr, nullptr);
    char buf[4096];
    ssize_t n = recv(c, buf, sizeof(buf), 0);
    if (n > 0) received.assign(buf, n);
    const char resp[] = "HTTP/1.1 204 No Content\r\n\r\n";
    send(c, resp, sizeof(resp) - 1, 0);
    close(c);
  });
  SimulatedClock clock;
  auto alarm = WebhookAlarm::Create(
      "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/hook", clock, 1);
  ASSERT_TRUE(alarm.ok());
  AlarmEvent e;
  e.job_id = 5;
  EXPECT_TRUE((*alarm)->Send(e).ok());
  server.join();
  close(fd);
  EXPECT_NE(received.find("POST /hook HTTP/1.1"), std::string::npos);
  EXPECT_NE(received.find("\"job_id\":5"), std::string::npos);
}

// Each failed POST is followed by a wait on the clock, 200 ms doubling; after the last
// attempt Send gives up with the last error.
TEST(WebhookAlarmTest, RetriesWaitOnTheClock) {
  // A port nothing listens on: bound, then closed.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  SimulatedClock clock;
  const absl::Time start = clock.Now();
  auto alarm = WebhookAlarm::Create(
      "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/hook", clock, 3);
  ASSERT_TRUE(alarm.ok());
  absl::Status sent;
  std::thread sender([&] { sent = (*alarm)->Send(AlarmEvent()); });
  for (absl::Duration wait :
       {absl::Milliseconds(200), absl::Milliseconds(400), absl::Milliseconds(800)}) {
    clock.AwaitWaiters(1);
    // Not a moment less than the backoff.
    clock.Advance(wait - absl::Milliseconds(1));
    EXPECT_EQ(clock.Waiters(), 1);
    clock.Advance(absl::Milliseconds(1));
  }
  sender.join();
  EXPECT_EQ(sent.code(), absl::StatusCode::kUnavailable) << sent;
  EXPECT_EQ(clock.Now() - start, absl::Milliseconds(1400));
}

}  // namespace
}  // namespace jobwheel::scheduler
