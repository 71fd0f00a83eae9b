// WebhookAlarm: URLs (http:// and https://), the allowlist, and posts to a real local listener.
#include "services/scheduler/webhook_alarm.h"

#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace jobwheel::scheduler {
namespace {

TEST(WebhookAlarmTest, AcceptsHttpAndHttpsOnly) {
  EXPECT_EQ(WebhookAlarm::Create("ftp://x", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WebhookAlarm::Create("http://", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WebhookAlarm::Create("https://", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WebhookAlarm::Create("http://h:99999/", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(WebhookAlarm::Create("https://hooks.example.com/alarm", {}).ok());
  EXPECT_TRUE(WebhookAlarm::Create("http://127.0.0.1:8080/alarm", {}).ok());
}

TEST(WebhookAlarmTest, AllowlistAdmitsOnlyListedHosts) {
  EXPECT_TRUE(WebhookAlarm::CheckAllowlist("http://hooks.example.com/x", "hooks.example.com").ok());
  EXPECT_TRUE(
      WebhookAlarm::CheckAllowlist("http://Hooks.Example.com:8080/x", "a.b, hooks.example.com:8080")
          .ok());
  EXPECT_TRUE(WebhookAlarm::CheckAllowlist("http://127.0.0.1:9/x", "127.0.0.1").ok());
  // https:// under the same rules; its default port is 443.
  EXPECT_TRUE(
      WebhookAlarm::CheckAllowlist("https://hooks.example.com/x", "hooks.example.com").ok());
  EXPECT_TRUE(
      WebhookAlarm::CheckAllowlist("https://hooks.example.com/x", "hooks.example.com:443").ok());
  EXPECT_EQ(
      WebhookAlarm::CheckAllowlist("https://hooks.example.com/x", "hooks.example.com:80").code(),
      absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(WebhookAlarm::CheckAllowlist("https://other.example.com/", "hooks.example.com").code(),
            absl::StatusCode::kFailedPrecondition);
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

// A local receiver on an ephemeral port.
class Receiver {
 public:
  Receiver() {
    server_.Post("/alarm", [this](const httplib::Request& req, httplib::Response& res) {
      absl::MutexLock lock(&mu_);
      body_ = req.body;
      key_ = req.get_header_value("Idempotency-Key");
      type_ = req.get_header_value("Content-Type");
      res.status = status_;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // Bound and listening from here on: connections wait in the backlog until it accepts.
  }
  ~Receiver() {
    // stop() acts only on a running server.
    while (!server_.is_running()) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  void set_status(int s) {
    absl::MutexLock lock(&mu_);
    status_ = s;
  }
  std::string body() {
    absl::MutexLock lock(&mu_);
    return body_;
  }
  std::string key() {
    absl::MutexLock lock(&mu_);
    return key_;
  }
  std::string type() {
    absl::MutexLock lock(&mu_);
    return type_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  int status_ ABSL_GUARDED_BY(mu_) = 200;
  std::string body_ ABSL_GUARDED_BY(mu_), key_ ABSL_GUARDED_BY(mu_), type_ ABSL_GUARDED_BY(mu_);
};

TEST(WebhookAlarmTest, PostsTheBodyWithItsIdempotencyKey) {
  Receiver receiver;
  auto alarm =
      WebhookAlarm::Create("http://127.0.0.1:" + std::to_string(receiver.port()) + "/alarm", {});
  ASSERT_TRUE(alarm.ok());
  EXPECT_TRUE((*alarm)->Post("{\"kind\":\"run_failed\"}", "run_failed/7").ok());
  EXPECT_EQ(receiver.body(), "{\"kind\":\"run_failed\"}");
  EXPECT_EQ(receiver.key(), "run_failed/7");
  EXPECT_EQ(receiver.type(), "application/json");
  receiver.set_status(503);
  absl::Status s = (*alarm)->Post("{}", "k");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("503"), std::string::npos) << s;
}

TEST(WebhookAlarmTest, ARefusedConnectionIsUnavailable) {
  int port = 0;
  {
    Receiver gone;  // Its port, free again once it stops.
    port = gone.port();
  }
  auto alarm = WebhookAlarm::Create("http://127.0.0.1:" + std::to_string(port) + "/alarm", {});
  ASSERT_TRUE(alarm.ok());
  EXPECT_EQ((*alarm)->Post("{}", "k").code(), absl::StatusCode::kUnavailable);
}

TEST(WebhookAlarmTest, HttpsNeedsATlsServer) {
  Receiver plain;  // Speaks plain HTTP: the TLS handshake fails, nothing is accepted.
  WebhookAlarm::Options options;
  options.timeout = absl::Seconds(2);
  auto alarm =
      WebhookAlarm::Create("https://127.0.0.1:" + std::to_string(plain.port()) + "/alarm", options);
  ASSERT_TRUE(alarm.ok());
  EXPECT_EQ((*alarm)->Post("{}", "k").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(plain.body(), "");
}

}  // namespace
}  // namespace jobwheel::scheduler
