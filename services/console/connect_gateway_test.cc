#include "services/console/connect_gateway.h"

#include <string>

#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.pb.h"
#include "services/console/fake_backend_caller.h"

namespace jobwheel::console {
namespace {

using Call = FakeBackendCaller::CallRecord;

constexpr char kListJobs[] = "/jobwheel.v1.JobAdminService/ListJobs";

std::string OneJob() {
  v1::ListJobsResponse resp;
  v1::Job* job = resp.add_jobs();
  job->set_id(42);
  job->set_app("demo");
  job->set_name("echo-every-second");
  job->set_fail_retry_count(2);
  resp.set_next_page_token("next");
  return resp.SerializeAsString();
}

class ConnectGatewayTest : public ::testing::Test {
 protected:
  ConnectGatewayTest()
      : backend_([this](const Call& call) { return answer_(call); }),
        gateway_(RouteTable::Console(), backend_, clock_, Options()) {}

  static ConnectGateway::Options Options() {
    ConnectGateway::Options o;
    o.request_timeout = absl::Seconds(10);
    o.max_body_bytes = 4096;
    return o;
  }

  ConnectRequest Json(const std::string& path, const std::string& body) {
    ConnectRequest r;
    r.path = path;
    r.content_type = "application/json";
    r.body = body;
    r.authorization = "Bearer secret-token";
    return r;
  }

  FakeClock clock_;
  FakeBackendCaller::Answer answer_ = [](const Call&) { return OneJob(); };
  FakeBackendCaller backend_;
  ConnectGateway gateway_;
};

TEST_F(ConnectGatewayTest, JsonInJsonOutWithTheCallersToken) {
  ConnectResponse r = gateway_.Handle(Json(kListJobs, R"({"app":"demo","pageSize":5})"));
  ASSERT_EQ(r.http_status, 200) << r.body;
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(r.content_type, "application/json");
  // proto3 JSON: lowerCamel names, int64 as strings.
  EXPECT_NE(r.body.find(R"("id":"42")"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("name":"echo-every-second")"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("failRetryCount":2)"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("nextPageToken":"next")"), std::string::npos) << r.body;
  EXPECT_EQ(r.service, "JobAdminService");
  EXPECT_EQ(r.method, "ListJobs");

  Call call = backend_.last();
  EXPECT_EQ(call.backend, Backend::kScheduler);
  EXPECT_EQ(call.grpc_path, kListJobs);
  EXPECT_EQ(call.authorization, "Bearer secret-token");
  EXPECT_EQ(call.deadline, clock_.Now() + absl::Seconds(10));
  v1::ListJobsRequest sent;
  ASSERT_TRUE(sent.ParseFromString(call.request));
  EXPECT_EQ(sent.app(), "demo");
  EXPECT_EQ(sent.page_size(), 5);
}

TEST_F(ConnectGatewayTest, ProtoFieldNamesAndCharsetAreAccepted) {
  ConnectRequest req = Json(kListJobs, R"({"name_contains":"echo"})");
  req.content_type = "Application/JSON; charset=UTF-8";
  ConnectResponse r = gateway_.Handle(req);
  ASSERT_EQ(r.http_status, 200) << r.body;
  v1::ListJobsRequest sent;
  ASSERT_TRUE(sent.ParseFromString(backend_.last().request));
  EXPECT_EQ(sent.name_contains(), "echo");
}

TEST_F(ConnectGatewayTest, EmptyBodyIsTheEmptyMessage) {
  ConnectResponse r = gateway_.Handle(Json(kListJobs, ""));
  EXPECT_EQ(r.http_status, 200) << r.body;
  EXPECT_EQ(backend_.last().request, "");
}

TEST_F(ConnectGatewayTest, BinaryProtoPassesThrough) {
  v1::ListJobsRequest in;
  in.set_app("demo");
  ConnectRequest req = Json(kListJobs, in.SerializeAsString());
  req.content_type = "application/proto";
  ConnectResponse r = gateway_.Handle(req);
  ASSERT_EQ(r.http_status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/proto");
  EXPECT_EQ(r.body, OneJob());
  EXPECT_EQ(backend_.last().request, in.SerializeAsString());
}

TEST_F(ConnectGatewayTest, UnknownFieldIsInvalidArgumentNamingIt) {
  ConnectResponse r = gateway_.Handle(Json(kListJobs, R"({"app":"demo","bogusField":1})"));
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.body.find(R"("code":"invalid_argument")"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("bogusField"), std::string::npos) << r.body;
  EXPECT_EQ(backend_.calls(), 0);
}

TEST_F(ConnectGatewayTest, MalformedJsonAndWrongTypesAreInvalidArgument) {
  for (const char* body : {"{", "[]", R"({"pageSize":"many"})", "not json"}) {
    ConnectResponse r = gateway_.Handle(Json(kListJobs, body));
    EXPECT_EQ(r.http_status, 400) << body;
    EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument) << body;
  }
  ConnectRequest bad_proto = Json(kListJobs, "\xff\xff\xff");
  bad_proto.content_type = "application/proto";
  EXPECT_EQ(gateway_.Handle(bad_proto).http_status, 400);
  EXPECT_EQ(backend_.calls(), 0);
}

TEST_F(ConnectGatewayTest, BackendErrorsKeepCodeAndMessage) {
  answer_ = [](const Call&) -> absl::StatusOr<std::string> {
    return absl::InvalidArgumentError("job.schedule.cron.expression: bad field 'x'");
  };
  ConnectResponse r = gateway_.Handle(Json(kListJobs, "{}"));
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(
      r.body,
      R"({"code":"invalid_argument","message":"job.schedule.cron.expression: bad field 'x'"})");

  answer_ = [](const Call&) -> absl::StatusOr<std::string> {
    return absl::UnauthenticatedError("missing bearer token");
  };
  r = gateway_.Handle(Json(kListJobs, "{}"));
  EXPECT_EQ(r.http_status, 401);
  EXPECT_EQ(r.body, R"({"code":"unauthenticated","message":"missing bearer token"})");

  answer_ = [](const Call&) -> absl::StatusOr<std::string> {
    return absl::UnavailableError("connection refused");
  };
  EXPECT_EQ(gateway_.Handle(Json(kListJobs, "{}")).http_status, 503);
}

TEST_F(ConnectGatewayTest, RegistryMethodsGoToTheRegistry) {
  answer_ = [](const Call&) { return std::string(); };
  ConnectResponse r =
      gateway_.Handle(Json("/jobwheel.v1.RegistryService/ListExecutors", R"({"app":"demo"})"));
  ASSERT_EQ(r.http_status, 200) << r.body;
  EXPECT_EQ(r.body, "{}");
  EXPECT_EQ(backend_.last().backend, Backend::kRegistry);
}

TEST_F(ConnectGatewayTest, UnknownOrDisallowedProcedureIs404Unimplemented) {
  for (const char* path :
       {"/jobwheel.v1.JobAdminService/Nope", "/jobwheel.v1.DispatcherService/Dispatch",
        "/jobwheel.v1.RegistryService/WatchExecutors", "/index.html"}) {
    ConnectResponse r = gateway_.Handle(Json(path, "{}"));
    EXPECT_EQ(r.http_status, 404) << path;
    EXPECT_EQ(r.status.code(), absl::StatusCode::kUnimplemented) << path;
    EXPECT_NE(r.body.find(R"("code":"unimplemented")"), std::string::npos) << r.body;
  }
  EXPECT_EQ(backend_.calls(), 0);
}

TEST_F(ConnectGatewayTest, WrongContentTypeIs415) {
  for (const char* type : {"", "text/plain", "application/x-www-form-urlencoded",
                           "application/json; charset=latin1", "application/connect+json"}) {
    ConnectRequest req = Json(kListJobs, "{}");
    req.content_type = type;
    ConnectResponse r = gateway_.Handle(req);
    EXPECT_EQ(r.http_status, 415) << type;
    EXPECT_EQ(r.content_type, "application/json");
  }
  EXPECT_EQ(backend_.calls(), 0);
}

TEST_F(ConnectGatewayTest, OversizedBodyIsRefused) {
  ConnectResponse r = gateway_.Handle(Json(kListJobs, std::string(4097, ' ')));
  EXPECT_EQ(r.http_status, 413);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(backend_.calls(), 0);
}

TEST_F(ConnectGatewayTest, ConnectTimeoutShortensTheDeadlineButNeverExtendsIt) {
  ConnectRequest req = Json(kListJobs, "{}");
  req.timeout_ms = "1500";
  ASSERT_EQ(gateway_.Handle(req).http_status, 200);
  EXPECT_EQ(backend_.last().deadline, clock_.Now() + absl::Milliseconds(1500));
  req.timeout_ms = "9999999999";
  ASSERT_EQ(gateway_.Handle(req).http_status, 200);
  EXPECT_EQ(backend_.last().deadline, clock_.Now() + absl::Seconds(10));
  for (const char* bad : {"0", "-5", "abc", "12345678901", "+5", " 5"}) {
    req.timeout_ms = bad;
    EXPECT_EQ(gateway_.Handle(req).http_status, 400) << bad;
  }
}

TEST_F(ConnectGatewayTest, DeadlineExceededIs504) {
  answer_ = [](const Call&) -> absl::StatusOr<std::string> {
    return absl::DeadlineExceededError("Deadline Exceeded");
  };
  ConnectResponse r = gateway_.Handle(Json(kListJobs, "{}"));
  EXPECT_EQ(r.http_status, 504);
  EXPECT_NE(r.body.find("deadline_exceeded"), std::string::npos);
}

TEST_F(ConnectGatewayTest, ProtocolVersionOtherThanOneIsRefused) {
  ConnectRequest req = Json(kListJobs, "{}");
  req.protocol_version = "1";
  EXPECT_EQ(gateway_.Handle(req).http_status, 200);
  req.protocol_version = "2";
  EXPECT_EQ(gateway_.Handle(req).http_status, 400);
}

TEST_F(ConnectGatewayTest, OnlyUncompressedBodiesAreTaken) {
  ConnectRequest req = Json(kListJobs, "{}");
  for (const char* plain : {"", "identity", "Identity "}) {
    req.content_encoding = plain;
    EXPECT_EQ(gateway_.Handle(req).http_status, 200) << plain;
  }
  // An inflated body could be many times the limit: every compression is refused.
  for (const char* compressed : {"gzip", "GZIP", "deflate", "br", "zstd"}) {
    req.content_encoding = compressed;
    ConnectResponse r = gateway_.Handle(req);
    EXPECT_EQ(r.http_status, 415) << compressed;
    EXPECT_EQ(r.status.code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(r.body.find("identity"), std::string::npos) << r.body;
  }
  EXPECT_EQ(backend_.calls(), 3);
}

TEST_F(ConnectGatewayTest, AJsonSyntaxErrorDoesNotEchoTheBody) {
  for (const char* body : {R"({"app": "demo", "nameContains": s3cr3t-param})",
                           R"({"app": "demo", "pageSize": "s3cr3t-param"})",
                           R"({"nameContains": "s3cr3t-param" "app": "demo"})"}) {
    ConnectResponse r = gateway_.Handle(Json(kListJobs, body));
    EXPECT_EQ(r.http_status, 400) << body;
    EXPECT_EQ(r.status.message().find("s3cr3t"), absl::string_view::npos) << r.status;
    EXPECT_EQ(r.body.find("s3cr3t"), std::string::npos) << r.body;
    EXPECT_NE(r.status.message().find("jobwheel.v1.ListJobsRequest"), absl::string_view::npos);
  }
  // An unknown field is still named.
  ConnectResponse r = gateway_.Handle(Json(kListJobs, R"({"nope": 1})"));
  EXPECT_NE(r.status.message().find("nope"), absl::string_view::npos) << r.status;
}

TEST_F(ConnectGatewayTest, AClientOverItsFailureBudgetIsRefusedWithoutReachingTheBackend) {
  ConnectGateway::Options o;
  o.failed_auth.burst = 3;
  o.failed_auth.per_second = 0.001;
  FakeBackendCaller backend(
      [](const FakeBackendCaller::CallRecord& call) -> absl::StatusOr<std::string> {
        if (call.authorization != "Bearer good") return absl::UnauthenticatedError("invalid token");
        return std::string();
      });
  ConnectGateway gateway(RouteTable::Console(), backend, clock_, o);
  ConnectRequest good = Json(kListJobs, "{}");
  good.authorization = "Bearer good";
  good.client = "10.0.0.1";
  EXPECT_EQ(gateway.Handle(good).http_status, 200);  // Seen accepted.
  ConnectRequest junk = good;
  junk.authorization = "Bearer junk";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(gateway.Handle(junk).http_status, 401);
  ConnectResponse limited = gateway.Handle(junk);
  EXPECT_EQ(limited.http_status, 429);
  EXPECT_EQ(limited.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(limited.status.message().find("10.0.0.1"), absl::string_view::npos);
  EXPECT_EQ(backend.calls(), 4);
  EXPECT_EQ(backend.last().client, "10.0.0.1");
  // A token seen accepted still goes through; another client is not affected.
  EXPECT_EQ(gateway.Handle(good).http_status, 200);
  junk.client = "10.0.0.2";
  EXPECT_EQ(gateway.Handle(junk).http_status, 401);
  EXPECT_EQ(backend.calls(), 6);
}

TEST_F(ConnectGatewayTest, NonAsciiAuthorizationIsRefusedWithoutCallingTheBackend) {
  ConnectRequest req = Json(kListJobs, "{}");
  req.authorization = "Bearer a\nb";
  ConnectResponse r = gateway_.Handle(req);
  EXPECT_EQ(r.http_status, 401);
  EXPECT_EQ(r.body.find("a\nb"), std::string::npos);
  EXPECT_EQ(backend_.calls(), 0);
}

TEST_F(ConnectGatewayTest, NoAuthorizationIsForwardedAsNone) {
  ConnectRequest req = Json(kListJobs, "{}");
  req.authorization.clear();
  ASSERT_EQ(gateway_.Handle(req).http_status, 200);
  EXPECT_EQ(backend_.last().authorization, "");
}

}  // namespace
}  // namespace jobwheel::console
