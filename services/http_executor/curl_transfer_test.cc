// CurlTransfer against a local cpp-httplib server: what is sent and read, the pins and the
// connection check, and the ways a transfer stops early.
#include "services/http_executor/curl_transfer.h"

#include <atomic>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace jobwheel::http_executor {
namespace {

class CurlTransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/ok", [this](const httplib::Request&, httplib::Response& res) {
      ++hits_;
      res.set_header("X-A", "1");
      res.set_content(std::string(2000, 'a'), "text/plain");
    });
    server_.Post("/echo", [this](const httplib::Request& req, httplib::Response& res) {
      ++hits_;
      res.status = 201;
      res.set_content(absl::StrCat(req.method, " ", req.get_header_value("X-Sent"), " ", req.body),
                      "text/plain");
    });
    server_.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      ++hits_;
      res.set_chunked_content_provider("text/plain", [this](size_t, httplib::DataSink& sink) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (!sink.write("x", 1)) {
          client_gone_ = true;
          return false;
        }
        return true;
      });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  void TearDown() override {
    while (!server_.is_running()) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }

  HopRequest Get(const std::string& path, const std::string& host = "127.0.0.1") {
    HopRequest r;
    r.method = "GET";
    r.url = *net::ParseHttpUrl(absl::StrCat("http://", host, ":", port_, path));
    return r;
  }
  TransferControl Control(absl::Duration timeout = absl::Seconds(10)) {
    TransferControl c;
    c.deadline = RealClock::Get().Now() + timeout;
    c.cancelled = [this] { return cancel_.load(); };
    c.allow_connect = [](const net::IpAddress&) { return absl::OkStatus(); };
    return c;
  }
  const std::vector<net::IpAddress> kLocal = {*net::ParseIp("127.0.0.1")};

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> hits_{0};
  std::atomic<bool> client_gone_{false};
  std::atomic<bool> cancel_{false};
  CurlTransfer transfer_{CurlTransfer::Options{}, RealClock::Get()};
};

TEST_F(CurlTransferTest, StatusHeadersAndTheHeadOfTheBody) {
  auto r = transfer_.Perform(Get("/ok"), kLocal, Control());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("x-a"), "1");
  EXPECT_EQ(r->body_head, std::string(1024, 'a'));
  EXPECT_EQ(r->body_bytes, 2000);
  EXPECT_FALSE(r->body_cut);
  EXPECT_EQ(r->connected_ip, "127.0.0.1");
  TransferControl small = Control();
  small.max_body_bytes = 1500;
  auto cut = transfer_.Perform(Get("/ok"), kLocal, small);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_TRUE(cut->body_cut);
  EXPECT_EQ(cut->status, 200);
}

TEST_F(CurlTransferTest, MethodHeadersAndBody) {
  HopRequest post = Get("/echo");
  post.method = "POST";
  post.body = "payload";
  post.headers = {{"X-Sent", "yes"}};
  auto r = transfer_.Perform(post, kLocal, Control());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body_head, "POST yes payload");
}

TEST_F(CurlTransferTest, ANameGoesToItsPinsWithoutAnotherLookup) {
  // "pinned.invalid" cannot resolve: only the pin lets curl reach the server.
  auto r = transfer_.Perform(Get("/ok", "pinned.invalid"), kLocal, Control());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
}

TEST_F(CurlTransferTest, EveryConnectionIsCheckedBeforeItOpens) {
  TransferControl refuse = Control();
  refuse.allow_connect = [](const net::IpAddress& ip) {
    return absl::PermissionDeniedError("refused by rule \"loopback\": " + net::IpToString(ip));
  };
  auto r = transfer_.Perform(Get("/ok"), kLocal, refuse);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
  EXPECT_NE(r.status().message().find("loopback"), std::string::npos);
  // An address outside the pins is refused too.
  auto other = transfer_.Perform(Get("/ok"), {*net::ParseIp("127.0.0.2")}, Control());
  EXPECT_EQ(other.status().code(), absl::StatusCode::kPermissionDenied) << other.status();
  EXPECT_EQ(hits_.load(), 0);
}

TEST_F(CurlTransferTest, CancellationAbortsTheTransfer) {
  std::thread canceller([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel_ = true;
  });
  const absl::Time start = absl::Now();
  auto r = transfer_.Perform(Get("/slow"), kLocal, Control());
  canceller.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  for (int i = 0; i < 100 && !client_gone_; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(client_gone_.load());
}

TEST_F(CurlTransferTest, TheDeadlineEndsTheTransfer) {
  const absl::Time start = absl::Now();
  auto r = transfer_.Perform(Get("/slow"), kLocal, Control(absl::Milliseconds(400)));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

TEST_F(CurlTransferTest, ARefusedPortIsUnavailable) {
  HopRequest r = Get("/ok");
  r.url.port = 1;  // Nothing listens there.
  EXPECT_EQ(transfer_.Perform(r, kLocal, Control()).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace jobwheel::http_executor
