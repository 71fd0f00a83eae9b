#include "services/console/console_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "jobwheel/v1/job_admin.pb.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "services/console/fake_backend_caller.h"

namespace jobwheel::console {
namespace {

using Call = FakeBackendCaller::CallRecord;

constexpr char kListJobs[] = "/jobwheel.v1.JobAdminService/ListJobs";

class ConsoleServerTest : public ::testing::Test {
 protected:
  ConsoleServerTest()
      : backend_([this](const Call& call) { return answer_(call); }),
        gateway_(RouteTable::Console(), backend_, clock_, ConnectGateway::Options{}),
        metrics_(registry_, RouteTable::Console().Procedures()) {}

  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/console_server_test_", getpid());
    mkdir(root_.c_str(), 0755);
    std::ofstream(root_ + "/index.html") << "<!doctype html><title>jobwheel</title>";
    std::ofstream(root_ + "/app.js") << "export const x = 1;";
    pages_ = std::make_unique<StaticFiles>(root_);
  }

  void Start(ConsoleServer::Options options = {}) {
    options.listen = "127.0.0.1:0";
    server_ = std::make_unique<ConsoleServer>(
        options, gateway_, *pages_, [this] { return ready_; }, metrics_, clock_);
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
  }

  httplib::Result PostJson(const std::string& path, const std::string& body) {
    return client_->Post(path.c_str(), {{"Authorization", "Bearer t0ken"}}, body,
                         "application/json");
  }

  std::string Metrics() { return prometheus::TextSerializer().Serialize(registry_.Collect()); }

  static void ExpectSecurityHeaders(const httplib::Response& res) {
    for (const auto& [name, value] : ConsoleServer::SecurityHeaders()) {
      EXPECT_EQ(res.get_header_value(name.c_str()), value) << name;
    }
    EXPECT_NE(res.get_header_value("Content-Security-Policy").find("frame-ancestors 'none'"),
              std::string::npos);
  }

  FakeClock clock_;
  FakeBackendCaller::Answer answer_ = [](const Call&) {
    v1::ListJobsResponse resp;
    resp.add_jobs()->set_name("nightly");
    return resp.SerializeAsString();
  };
  FakeBackendCaller backend_;
  ConnectGateway gateway_;
  prometheus::Registry registry_;
  ConsoleMetrics metrics_;
  absl::Status ready_ = absl::OkStatus();
  std::string root_;
  std::unique_ptr<StaticFiles> pages_;
  std::unique_ptr<ConsoleServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ConsoleServerTest, RpcAnswersJsonWithNoStoreAndSecurityHeaders) {
  Start();
  auto res = PostJson(kListJobs, "{}");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->body, R"({"jobs":[{"name":"nightly"}]})");
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(res->get_header_value("Cache-Control"), "no-store");
  ExpectSecurityHeaders(*res);
  EXPECT_EQ(backend_.last().authorization, "Bearer t0ken");
  EXPECT_NE(
      Metrics().find(
          R"(jobwheel_console_requests_total{code="ok",method="ListJobs",service="JobAdminService"} 1)"),
      std::string::npos)
      << Metrics();
}

TEST_F(ConsoleServerTest, ErrorsAreConnectBodies) {
  Start();
  auto res = PostJson(kListJobs, R"({"nope":1})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find(R"("code":"invalid_argument")"), std::string::npos) << res->body;
  EXPECT_EQ(res->get_header_value("Cache-Control"), "no-store");
  ExpectSecurityHeaders(*res);

  res = PostJson("/jobwheel.v1.DispatcherService/Dispatch", "{}");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(res->body.find(R"("code":"unimplemented")"), std::string::npos) << res->body;

  res = client_->Post(kListJobs, "{}", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 415);
  EXPECT_EQ(res->get_header_value("Accept-Post"), "application/json, application/proto");
  EXPECT_EQ(backend_.calls(), 0);
}

TEST_F(ConsoleServerTest, OversizedBodyIsRefusedBeforeTheBackend) {
  ConsoleServer::Options options;
  options.max_body_bytes = 2048;
  Start(options);
  auto res = PostJson(kListJobs, absl::StrCat(R"({"app":")", std::string(4096, 'a'), R"("})"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_NE(res->body.find(R"("code":"resource_exhausted")"), std::string::npos) << res->body;
  EXPECT_EQ(backend_.calls(), 0);
}

TEST_F(ConsoleServerTest, GetOnAnRpcPathIs405AndOtherMethodsToo) {
  Start();
  auto res = client_->Get(kListJobs);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "POST");
  res = client_->Put("/index.html", "x", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  res = client_->Delete(kListJobs);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  ExpectSecurityHeaders(*res);
}

TEST_F(ConsoleServerTest, PagesAreServedWithTypesAndHeaders) {
  Start();
  auto res = client_->Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "<!doctype html><title>jobwheel</title>");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
  ExpectSecurityHeaders(*res);
  res = client_->Get("/app.js");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  res = client_->Get("/missing.js");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  ExpectSecurityHeaders(*res);
}

TEST_F(ConsoleServerTest, TraversalIsRefused) {
  // A file beside the web root that a traversal would reach.
  std::ofstream(root_ + "/../console_server_test_secret.txt") << "secret";
  Start();
  for (const char* path :
       {"/../console_server_test_secret.txt", "/%2e%2e/console_server_test_secret.txt",
        "/..%2fconsole_server_test_secret.txt", "/%2e%2e%2f%2e%2e%2fetc/passwd"}) {
    auto res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path;
    EXPECT_EQ(res->body.find("secret"), std::string::npos) << path;
  }
}

TEST_F(ConsoleServerTest, HealthAndReadiness) {
  Start();
  auto res = client_->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = client_->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ready_ = absl::UnavailableError("scheduler: connection refused");
  res = client_->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_NE(res->body.find("scheduler: connection refused"), std::string::npos);
}

TEST_F(ConsoleServerTest, RequestsBeyondTheLimitAreRefusedAtOnce) {
  absl::Notification entered, release;
  answer_ = [&](const Call&) -> absl::StatusOr<std::string> {
    entered.Notify();
    release.WaitForNotification();
    return std::string();
  };
  ConsoleServer::Options options;
  options.max_concurrent_requests = 1;
  Start(options);
  int first_status = 0;
  std::thread first([&] {
    httplib::Client other("127.0.0.1", server_->port());
    auto res = other.Post(kListJobs, "{}", "application/json");
    first_status = res ? res->status : -1;
  });
  entered.WaitForNotification();
  auto res = PostJson(kListJobs, "{}");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_NE(res->body.find(R"("code":"unavailable")"), std::string::npos) << res->body;
  release.Notify();
  first.join();
  EXPECT_EQ(first_status, 200);
  EXPECT_EQ(backend_.calls(), 1);
}

TEST_F(ConsoleServerTest, ShutdownLetsARequestInProgressFinish) {
  absl::Notification entered, release;
  answer_ = [&](const Call&) -> absl::StatusOr<std::string> {
    entered.Notify();
    release.WaitForNotification();
    return std::string();
  };
  Start();
  int status = 0;
  std::thread caller([&] {
    auto res = PostJson(kListJobs, "{}");
    status = res ? res->status : -1;
  });
  entered.WaitForNotification();
  absl::Notification stopped;
  std::thread stopper([&] {
    server_->Shutdown();
    stopped.Notify();
  });
  // Shutdown waits for the request: it cannot return before the backend answers.
  EXPECT_FALSE(stopped.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
  release.Notify();
  caller.join();
  stopper.join();
  EXPECT_EQ(status, 200);
  EXPECT_FALSE(client_->Get("/healthz"));
}

TEST_F(ConsoleServerTest, ShutdownIsIdempotent) {
  Start();
  server_->Shutdown();
  server_->Shutdown();
  auto res = client_->Get("/healthz");
  EXPECT_FALSE(res);
}

// A raw request over one connection: the whole answer (the server closes after it).
std::string RawExchange(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) return "connect failed";
  (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

TEST_F(ConsoleServerTest, CompressedBodiesAreRefusedBeforeTheyAreRead) {
  Start();
  // The headers only: the server must answer without waiting for (or inflating) the body.
  const std::string answer = RawExchange(
      server_->port(), absl::StrCat("POST ", kListJobs,
                                    " HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                                    "Content-Encoding: gzip\r\nContent-Length: 130000\r\n\r\n"));
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 415")) << answer;
  EXPECT_NE(answer.find("Accept-Encoding: identity"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  EXPECT_NE(answer.find("identity"), std::string::npos) << answer;
  EXPECT_EQ(backend_.calls(), 0);
}

TEST_F(ConsoleServerTest, BodiesOverTheLimitOrWithoutALengthAreRefused) {
  ConsoleServer::Options options;
  options.max_body_bytes = 2048;
  Start(options);
  const std::string head = absl::StrCat(
      "POST ", kListJobs, " HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n");
  // Declared too long: refused from the headers alone.
  std::string answer =
      RawExchange(server_->port(), absl::StrCat(head, "Content-Length: 100000000\r\n\r\n"));
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 413")) << answer;
  // No length at all.
  answer = RawExchange(server_->port(), absl::StrCat(head, "\r\n{}"));
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 411")) << answer;
  // Chunked: read only up to the limit.
  std::string chunked = absl::StrCat(head, "Transfer-Encoding: chunked\r\n\r\n");
  for (int i = 0; i < 64; ++i) absl::StrAppend(&chunked, "400\r\n", std::string(1024, ' '), "\r\n");
  absl::StrAppend(&chunked, "0\r\n\r\n");
  answer = RawExchange(server_->port(), chunked);
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 413")) << answer;
  EXPECT_NE(answer.find("resource_exhausted"), std::string::npos) << answer;
  // A small chunked body is fine.
  answer =
      RawExchange(server_->port(), absl::StrCat(head,
                                                "Transfer-Encoding: chunked\r\n"
                                                "Connection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n"));
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 200")) << answer;
  EXPECT_EQ(backend_.calls(), 1);
}

}  // namespace
}  // namespace jobwheel::console
