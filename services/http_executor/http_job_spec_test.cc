#include "services/http_executor/http_job_spec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace jobwheel::http_executor {
namespace {

void ExpectInvalid(const std::string& param, const std::string& part) {
  absl::StatusOr<HttpJobSpec> spec = ParseHttpJobSpec(param);
  ASSERT_FALSE(spec.ok()) << param;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << param;
  EXPECT_NE(spec.status().message().find(part), std::string::npos)
      << param << " -> " << spec.status();
}

TEST(HttpJobSpecTest, MinimalSpecGetsTheDefaults) {
  absl::StatusOr<HttpJobSpec> spec = ParseHttpJobSpec(R"({"url": "https://API.example.com/x"})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->method, "GET");
  EXPECT_EQ(spec->url.ToString(), "https://api.example.com/x");
  EXPECT_EQ(spec->timeout, absl::Seconds(30));
  EXPECT_FALSE(spec->follow_redirects);
  EXPECT_TRUE(spec->expected_status.Matches(204));
  EXPECT_FALSE(spec->expected_status.Matches(301));
  EXPECT_TRUE(spec->headers.empty());
  EXPECT_TRUE(spec->secret_headers.empty());
}

TEST(HttpJobSpecTest, EveryField) {
  absl::StatusOr<HttpJobSpec> spec = ParseHttpJobSpec(R"({
    "method": "post", "url": "http://10.0.0.5:8080/hook?a=1",
    "headers": {"Content-Type": "application/json", "X-Trace": "t1"},
    "body": "{\"x\":1}",
    "expected_status": [200, "3xx", "404-405"],
    "timeout": "2.5s",
    "follow_redirects": true, "max_redirects": 3,
    "secret_headers": [{"name": "Authorization", "file": "billing", "prefix": "Bearer "},
                       {"name": "X-Key", "env": "JOBWHEEL_HTTP_SECRET_KEY"}]})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->method, "POST");
  EXPECT_EQ(spec->url.port, 8080);
  ASSERT_EQ(spec->headers.size(), 2u);
  EXPECT_EQ(spec->headers[0].first, "Content-Type");
  EXPECT_EQ(spec->body, "{\"x\":1}");
  EXPECT_TRUE(spec->expected_status.Matches(200));
  EXPECT_FALSE(spec->expected_status.Matches(201));
  EXPECT_TRUE(spec->expected_status.Matches(302));
  EXPECT_TRUE(spec->expected_status.Matches(405));
  EXPECT_EQ(spec->expected_status.ToString(), "200,3xx,404-405");
  EXPECT_EQ(spec->timeout, absl::Milliseconds(2500));
  EXPECT_TRUE(spec->follow_redirects);
  EXPECT_EQ(spec->max_redirects, 3);
  ASSERT_EQ(spec->secret_headers.size(), 2u);
  EXPECT_EQ(spec->secret_headers[0].source, SecretRef::Source::kFile);
  EXPECT_EQ(spec->secret_headers[0].name, "billing");
  EXPECT_EQ(spec->secret_headers[0].prefix, "Bearer ");
  EXPECT_EQ(spec->secret_headers[1].source, SecretRef::Source::kEnv);
  // lowerCamel names work too (the proto3 JSON mapping).
  EXPECT_TRUE(
      ParseHttpJobSpec(R"({"url":"http://h/","followRedirects":true,"maxRedirects":2})").ok());
  EXPECT_EQ(ParseHttpJobSpec(R"({"url":"http://h/","follow_redirects":true})")->max_redirects, 5);
}

TEST(HttpJobSpecTest, BadSpecsNameTheField) {
  ExpectInvalid("", "param: not an HTTP job spec");
  ExpectInvalid("not json", "param: not an HTTP job spec");
  ExpectInvalid(R"({"url":"http://h/","bogus":1})", "param: not an HTTP job spec");
  ExpectInvalid(R"({})", "param.url: must not be empty");
  ExpectInvalid(R"({"url":"ftp://h/"})", "param.url: must start with https:// or http://");
  ExpectInvalid(R"({"url":"http://u:p@h/"})", "param.url: user info");
  ExpectInvalid(R"({"url":"http://127.1/"})", "param.url: bad host");
  ExpectInvalid(R"({"url":"http://h/","method":"TRACE"})", "param.method");
  ExpectInvalid(R"({"url":"http://h/","method":"GET\r\nX: y"})", "param.method");
  ExpectInvalid(R"({"url":"http://h/","headers":{"X-A":"a\r\nX-B: b"}})",
                "param.headers[\"X-A\"]: value must not contain CR, LF or NUL");
  ExpectInvalid(R"({"url":"http://h/","headers":{"Bad Name":"v"}})",
                "param.headers[\"Bad Name\"]: not an HTTP header name");
  ExpectInvalid(R"({"url":"http://h/","headers":{"Host":"evil"}})", "set by the executor");
  ExpectInvalid(R"({"url":"http://h/","headers":{"Content-Length":"5"}})", "set by the executor");
  ExpectInvalid(R"({"url":"http://h/","headers":{"x-a":"1","X-A":"2"}})", "given twice");
  ExpectInvalid(R"({"url":"http://h/","headers":{"X-Jobwheel-Run":"1"}})", "the executor's");
  ExpectInvalid(R"({"url":"http://h/","expected_status":[99]})", "param.expected_status[0]");
  ExpectInvalid(R"({"url":"http://h/","expected_status":[200.5]})", "param.expected_status[0]");
  ExpectInvalid(R"({"url":"http://h/","expected_status":["6xx"]})", "param.expected_status");
  ExpectInvalid(R"({"url":"http://h/","expected_status":["300-200"]})", "param.expected_status");
  ExpectInvalid(R"({"url":"http://h/","expected_status":[true]})", "param.expected_status[0]");
  ExpectInvalid(R"({"url":"http://h/","timeout":"0s"})", "param.timeout");
  ExpectInvalid(R"({"url":"http://h/","timeout":"3601s"})", "param.timeout");
  ExpectInvalid(R"({"url":"http://h/","timeout":"-1s"})", "param.timeout");
  ExpectInvalid(R"({"url":"http://h/","max_redirects":11})", "param.max_redirects");
  ExpectInvalid(R"({"url":"http://h/","secret_headers":[{"name":"A"}]})",
                "param.secret_headers[0]: needs \"file\" or \"env\"");
  ExpectInvalid(R"({"url":"http://h/","secret_headers":[{"file":"f"}]})",
                "param.secret_headers[0].name");
  ExpectInvalid(R"({"url":"http://h/","headers":{"Authorization":"x"},
                    "secret_headers":[{"name":"authorization","file":"f"}]})",
                "given twice");
  ExpectInvalid(R"({"url":"http://h/","secret_headers":[{"name":"A","file":"f","prefix":"a\nb"}]})",
                "CR, LF or NUL");
  ExpectInvalid(absl::StrCat(R"({"url":"http://h/","body":")", std::string(300 * 1024, 'x'), "\"}"),
                "param.body");
}

TEST(ExpectedStatusTest, EntriesAndDefault) {
  EXPECT_EQ(ExpectedStatus().ToString(), "2xx");
  auto e = ExpectedStatus::FromEntries({"204", "5XX"});
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->Matches(204));
  EXPECT_TRUE(e->Matches(503));
  EXPECT_FALSE(e->Matches(200));
  for (const char* bad : {"", "20", "2000", "abc", "0xx", "600", "2x", "200-", "-200"}) {
    EXPECT_FALSE(ExpectedStatus::ParseEntry(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace jobwheel::http_executor
