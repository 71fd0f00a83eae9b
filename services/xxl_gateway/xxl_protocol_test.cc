#include "services/xxl_gateway/xxl_protocol.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::xxl {
namespace {

TEST(XxlProtocolTest, EndpointsBySuffix) {
  EXPECT_EQ(AdminEndpointOf("/xxl-job-admin/api/registry"), AdminEndpoint::kRegistry);
  EXPECT_EQ(AdminEndpointOf("/api/registry"), AdminEndpoint::kRegistry);
  EXPECT_EQ(AdminEndpointOf("/api/registryRemove"), AdminEndpoint::kRegistryRemove);
  EXPECT_EQ(AdminEndpointOf("/a/b/api/callback"), AdminEndpoint::kCallback);
  EXPECT_EQ(AdminEndpointOf("/api/other"), AdminEndpoint::kNone);
}

TEST(XxlProtocolTest, AdminReplyIsTheEnvelopeEveryVersionAccepts) {
  EXPECT_EQ(AdminReply(true), R"({"code":200,"msg":"Success","content":null,"data":null})");
  EXPECT_EQ(AdminReply(false, "bad \"token\""),
            R"({"code":500,"msg":"bad \"token\"","content":null,"data":null})");
}

TEST(XxlProtocolTest, RegistryParam) {
  auto p = ParseRegistryParam(
      R"({"registryGroup":"EXECUTOR","registryKey":"demo","registryValue":"http://10.0.0.7:9999/","x":1})");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->registry_key(), "demo");
  EXPECT_FALSE(
      ParseRegistryParam(R"({"registryGroup":"ADMIN","registryKey":"d","registryValue":"u"})")
          .ok());
  EXPECT_FALSE(ParseRegistryParam(R"({"registryKey":"a b","registryValue":"u"})").ok());
  EXPECT_FALSE(ParseRegistryParam("not json").ok());
}

TEST(XxlProtocolTest, CallbacksInBothShapes) {
  auto a = ParseCallbacks(
      R"([{"logId":5,"logDateTim":1,"handleCode":200},{"logId":6,"handleCode":500,"handleMsg":"x"}])");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[1].handle_msg(), "x");
  auto b = ParseCallbacks(R"({"callbackList":[{"logId":"7","logDateTime":2,"handleCode":502}]})");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)[0].log_id(), 7);
  EXPECT_FALSE(ParseCallbacks(R"([{"logId":0}])").ok());
  EXPECT_FALSE(ParseCallbacks(R"([1], "x": 2)").ok());
}

TEST(XxlProtocolTest, RepliesOfEveryVersion) {
  auto two = ParseReply(R"({"code":500,"msg":"job handler [x] not found."})");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->code, 500);
  EXPECT_EQ(two->msg, "job handler [x] not found.");
  auto three = ParseReply(R"({"code":200,"msg":null,"data":"job thread already killed."})");
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->msg, "job thread already killed.");
  auto obj = ParseReply(R"({"code":200,"data":{"a":1}})");
  ASSERT_TRUE(obj.ok()) << obj.status();
  EXPECT_EQ(obj->code, 200);
  auto log = ParseLogReply(
      R"({"code":200,"msg":"Success","data":{"fromLineNum":1,"toLineNum":2,"logContent":"a\nb","isEnd":false}})");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->log_content(), "a\nb");
}

TEST(XxlProtocolTest, TriggerJson) {
  Trigger t;
  t.job_id = 3;
  t.handler = "h\"x";
  t.log_id = 99;
  t.log_date_time_ms = 1700000000000;
  t.glue_type = "BEAN";
  t.block_strategy = "SERIAL_EXECUTION";
  const std::string j = TriggerJson(t);
  EXPECT_TRUE(absl::StrContains(j, R"("executorHandler":"h\"x")")) << j;
  EXPECT_TRUE(absl::StrContains(j, R"("logId":99,"logDateTime":1700000000000)")) << j;
  EXPECT_TRUE(absl::StrContains(j, R"("broadcastIndex":0,"broadcastTotal":1)")) << j;
}

TEST(XxlProtocolTest, ExecutorUrls) {
  auto u = ParseExecutorUrl("http://10.0.0.7:9999/");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->base, "http://10.0.0.7:9999");
  EXPECT_EQ(u->host, "10.0.0.7");
  u = ParseExecutorUrl("https://[::1]/ctx/");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->base, "https://[::1]:443/ctx");
  EXPECT_FALSE(ParseExecutorUrl("ftp://h:1/").ok());
  EXPECT_FALSE(ParseExecutorUrl("http://u:p@h:1/").ok());
  EXPECT_FALSE(ParseExecutorUrl("http://h:0/").ok());
  EXPECT_FALSE(ParseExecutorUrl("http://h:1/?a=b").ok());
  EXPECT_FALSE(ParseExecutorUrl("http://h h:1/").ok());
  EXPECT_FALSE(ParseExecutorUrl("http://:1/").ok());
}

}  // namespace
}  // namespace jobwheel::xxl
