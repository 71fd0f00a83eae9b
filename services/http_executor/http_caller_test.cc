// HttpCaller over a fake resolver and a fake transfer: the outbound policy on the URL and on
// every redirect hop, after resolution; what each hop sends.
#include "services/http_executor/http_caller.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::http_executor {
namespace {

class FakeResolver : public Resolver {
 public:
  absl::StatusOr<std::vector<net::IpAddress>> Resolve(const std::string& host) override {
    ++lookups[host];
    auto it = names.find(host);
    if (it == names.end()) return absl::NotFoundError("cannot resolve " + host);
    std::vector<net::IpAddress> out;
    for (const std::string& ip : it->second) out.push_back(*net::ParseIp(ip));
    return out;
  }
  std::map<std::string, std::vector<std::string>> names;
  std::map<std::string, int> lookups;
};

// Answers each URL with a scripted response; records what it was asked.
class FakeTransfer : public HttpTransfer {
 public:
  absl::StatusOr<HttpResponse> Perform(const HopRequest& request,
                                       const std::vector<net::IpAddress>& pinned,
                                       const TransferControl& control) override {
    requests.push_back(request);
    pins.push_back(pinned);
    for (const net::IpAddress& ip : pinned) {
      absl::Status allowed = control.allow_connect(ip);
      if (!allowed.ok()) return allowed;
    }
    auto it = answers.find(request.url.ToString());
    if (it == answers.end()) return absl::UnavailableError("no answer scripted");
    return it->second;
  }
  void Answer(const std::string& url, int status, const std::string& location = "") {
    HttpResponse r;
    r.status = status;
    if (!location.empty()) r.headers.emplace_back("Location", location);
    answers[url] = r;
  }
  std::map<std::string, HttpResponse> answers;
  std::vector<HopRequest> requests;
  std::vector<std::vector<net::IpAddress>> pins;
};

class HttpCallerTest : public ::testing::Test {
 protected:
  HttpCallerTest() : policy_(PolicyOptions()) {
    resolver_.names["api.example.com"] = {"93.184.216.34"};
    resolver_.names["internal.example.com"] = {"10.0.0.8"};
    resolver_.names["mixed.example.com"] = {"93.184.216.35", "127.0.0.1"};
    resolver_.names["other.example.com"] = {"93.184.216.36"};
  }
  static net::OutboundPolicyOptions PolicyOptions() {
    net::OutboundPolicyOptions o;
    o.allow_hosts = *net::HostAllowlist::Parse("127.0.0.1:8080", "--allow_hosts");
    o.allow_ports = *net::PortList::Parse("80,443", "--allow_ports");
    return o;
  }
  absl::StatusOr<HttpCaller::Outcome> Call(const std::string& param,
                                           const HeaderList& secrets = {}) {
    absl::StatusOr<HttpJobSpec> spec = ParseHttpJobSpec(param);
    EXPECT_TRUE(spec.ok()) << spec.status();
    if (!spec.ok()) return spec.status();
    HttpCaller caller(policy_, resolver_, transfer_, clock_, {});
    return caller.Call(
        *spec, secrets, clock_.Now() + spec->timeout, [] { return false; },
        [this](absl::string_view line) { log_.emplace_back(line); });
  }
  static void ExpectRule(const absl::StatusOr<HttpCaller::Outcome>& o, const std::string& rule) {
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.status().code(), absl::StatusCode::kPermissionDenied) << o.status();
    EXPECT_NE(o.status().message().find("refused by rule \"" + rule + "\""), std::string::npos)
        << o.status();
  }

  const net::OutboundPolicy policy_;
  FakeResolver resolver_;
  FakeTransfer transfer_;
  SimulatedClock clock_{absl::FromUnixSeconds(1000000)};
  std::vector<std::string> log_;
};

TEST_F(HttpCallerTest, AnAllowedCallIsPinnedToTheResolvedAddress) {
  transfer_.Answer("https://api.example.com/x", 200);
  auto o = Call(R"({"url":"https://api.example.com/x"})");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->response.status, 200);
  ASSERT_EQ(transfer_.pins.size(), 1u);
  EXPECT_EQ(transfer_.pins[0], std::vector<net::IpAddress>{*net::ParseIp("93.184.216.34")});
  EXPECT_EQ(resolver_.lookups["api.example.com"], 1);
}

TEST_F(HttpCallerTest, InternalAddressesAreRefusedBeforeAnyConnection) {
  ExpectRule(Call(R"({"url":"http://169.254.169.254/latest/meta-data/"})"), "metadata");
  ExpectRule(Call(R"({"url":"http://internal.example.com/"})"), "private");
  // One internal address among the answers refuses the name.
  ExpectRule(Call(R"({"url":"http://mixed.example.com/"})"), "loopback");
  ExpectRule(Call(R"({"url":"http://127.0.0.1:9090/"})"), "loopback");
  ExpectRule(Call(R"({"url":"http://metadata.google.internal/"})"), "metadata");
  ExpectRule(Call(R"({"url":"http://api.example.com:8443/"})"), "port");
  EXPECT_TRUE(transfer_.requests.empty());
  EXPECT_EQ(resolver_.lookups.count("metadata.google.internal"), 0u);  // Refused by name.
}

TEST_F(HttpCallerTest, RedirectsAreOffByDefault) {
  transfer_.Answer("http://127.0.0.1:8080/r", 302, "http://169.254.169.254/");
  auto o = Call(R"({"url":"http://127.0.0.1:8080/r"})");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->response.status, 302);
  EXPECT_EQ(transfer_.requests.size(), 1u);
}

TEST_F(HttpCallerTest, EveryRedirectHopIsCheckedAfterResolution) {
  transfer_.Answer("http://127.0.0.1:8080/r", 302, "http://169.254.169.254/latest");
  auto o = Call(R"({"url":"http://127.0.0.1:8080/r","follow_redirects":true})");
  ExpectRule(o, "metadata");
  EXPECT_TRUE(
      absl::StartsWith(o.status().message(), "redirect 1 to http://169.254.169.254/latest: "))
      << o.status();
  EXPECT_EQ(transfer_.requests.size(), 1u);
  // A public name that resolves to an internal address, reached by a redirect.
  transfer_.Answer("http://127.0.0.1:8080/r2", 307, "http://internal.example.com/x");
  ExpectRule(Call(R"({"url":"http://127.0.0.1:8080/r2","follow_redirects":true})"), "private");
  // Relative redirects stay on the allowed origin.
  transfer_.Answer("http://127.0.0.1:8080/a/b", 301, "../c");
  transfer_.Answer("http://127.0.0.1:8080/c", 200);
  auto ok = Call(R"({"url":"http://127.0.0.1:8080/a/b","follow_redirects":true})");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->redirects, 1);
  EXPECT_EQ(ok->url.ToString(), "http://127.0.0.1:8080/c");
  // Another port of the allowed host is not allowed.
  transfer_.Answer("http://127.0.0.1:8080/p", 302, "http://127.0.0.1:8081/");
  ExpectRule(Call(R"({"url":"http://127.0.0.1:8080/p","follow_redirects":true})"), "loopback");
  // Non-HTTP schemes.
  transfer_.Answer("http://127.0.0.1:8080/f", 302, "file:///etc/passwd");
  auto file = Call(R"({"url":"http://127.0.0.1:8080/f","follow_redirects":true})");
  EXPECT_EQ(file.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(HttpCallerTest, RedirectLimit) {
  transfer_.Answer("https://api.example.com/1", 302, "/2");
  transfer_.Answer("https://api.example.com/2", 302, "/3");
  transfer_.Answer("https://api.example.com/3", 200);
  EXPECT_TRUE(
      Call(R"({"url":"https://api.example.com/1","follow_redirects":true,"max_redirects":2})")
          .ok());
  auto o = Call(R"({"url":"https://api.example.com/1","follow_redirects":true,"max_redirects":1})");
  EXPECT_EQ(o.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(o.status().message().find("more than 1 redirects"), std::string::npos) << o.status();
}

TEST_F(HttpCallerTest, SecretsStayOnTheirOriginAndMethodsFollowTheStatus) {
  transfer_.Answer("https://api.example.com/a", 302, "/b");
  transfer_.Answer("https://api.example.com/b", 303, "https://other.example.com/c");
  transfer_.Answer("https://other.example.com/c", 200);
  auto o = Call(
      R"({"url":"https://api.example.com/a","method":"POST","body":"x",
          "headers":{"Content-Type":"text/plain","Cookie":"c=1","X-Plain":"p"},
          "follow_redirects":true})",
      {{"X-Api-Key", "k"}});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(transfer_.requests.size(), 3u);
  auto has = [](const HopRequest& r, const std::string& name) {
    for (const auto& h : r.headers) {
      if (absl::EqualsIgnoreCase(h.first, name)) return true;
    }
    return false;
  };
  EXPECT_EQ(transfer_.requests[0].method, "POST");
  EXPECT_TRUE(has(transfer_.requests[0], "X-Api-Key"));
  // 302 after POST: GET without the body, same origin keeps the secret.
  EXPECT_EQ(transfer_.requests[1].method, "GET");
  EXPECT_EQ(transfer_.requests[1].body, "");
  EXPECT_FALSE(has(transfer_.requests[1], "Content-Type"));
  EXPECT_TRUE(has(transfer_.requests[1], "X-Api-Key"));
  // Another origin: no secret, no cookie; other headers kept.
  EXPECT_FALSE(has(transfer_.requests[2], "X-Api-Key"));
  EXPECT_FALSE(has(transfer_.requests[2], "Cookie"));
  EXPECT_TRUE(has(transfer_.requests[2], "X-Plain"));
  for (const std::string& line : log_) EXPECT_EQ(line.find("X-Api-Key: k"), std::string::npos);
}

TEST_F(HttpCallerTest, TemporaryRedirectsKeepMethodAndBody) {
  transfer_.Answer("https://api.example.com/a", 307, "/b");
  transfer_.Answer("https://api.example.com/b", 200);
  ASSERT_TRUE(
      Call(
          R"({"url":"https://api.example.com/a","method":"PUT","body":"x","follow_redirects":true})")
          .ok());
  EXPECT_EQ(transfer_.requests[1].method, "PUT");
  EXPECT_EQ(transfer_.requests[1].body, "x");
}

}  // namespace
}  // namespace jobwheel::http_executor
