// End to end through the XXL gateway: the real registry, dispatcher and scheduler, the gateway
// and XXL-protocol test executors (tests/xxl/xxl_test_executor.py) of app "xxl-demo".
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/token_admin.pb.h"
#include "tests/xxl/xxl_stack_test.h"

namespace jobwheel::xxl_test {
namespace {

namespace v1 = jobwheel::v1;
using testing::Ctx;
using testing::Ends;
using testing::Eventually;
using testing::Starts;

// A TCP connection to 127.0.0.1:`port` from `source` (any 127/8 address on loopback); -1 when
// it cannot be made.
int ConnectFrom(const char* source, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// Sends `request` on `fd` and returns what comes back until the peer closes (or 5 s pass).
std::string Exchange(int fd, const std::string& request) {
  if (!request.empty()) (void)!send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

bool Ended(const v1::Run& r) {
  return r.status() != v1::RUN_STATUS_RUNNING && r.status() != v1::RUN_STATUS_PENDING;
}

class XxlGatewayTest : public XxlStackTest {};

TEST_F(XxlGatewayTest, RegistersRunsAJobAndItsLogIsReadable) {
  StartXxl(0, token_, "2");
  auto address = AwaitOnline(0, absl::Seconds(20));
  ASSERT_TRUE(address.ok()) << address.status();
  auto listed = Listed(0);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->labels().at("jobwheel.protocol"), "xxl-job");
  EXPECT_TRUE(absl::StrContains(listed->sdk_version(), "xxl_gateway")) << listed->sdk_version();

  auto job = CreateJob(XxlJob("echo", "echo", "hello xxl"));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(TriggerJob(job->id()).ok());
  auto run = AwaitRun(job->id(), Ended, absl::Seconds(20));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status(), v1::RUN_STATUS_SUCCEEDED) << run->result_message();
  EXPECT_EQ(run->executor_address(), *address);
  EXPECT_EQ(Starts(XxlExecutions(0), job->id()).size(), 1u);
  const std::vector<std::string> log = RunLog(run->id());
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return absl::StrContains(l, "hello xxl");
  })) << absl::StrJoin(log, "\n");
}

TEST_F(XxlGatewayTest, MissingWrongAndOtherAppTokensAreRefused) {
  const std::string reg = absl::StrCat(
      R"({"registryGroup":"EXECUTOR","registryKey":"xxl-demo","registryValue":"http://127.0.0.1:)",
      testing::PickFreePort(), R"(/"})");
  XxlAdminAnswer none = AdminPost("/xxl-job-admin/api/registry", reg, "");
  EXPECT_EQ(none.code, 500);
  EXPECT_TRUE(absl::StrContains(none.msg, "missing XXL-JOB-ACCESS-TOKEN")) << none.msg;
  XxlAdminAnswer wrong = AdminPost("/api/registry", reg, "jw_not-a-token");
  EXPECT_EQ(wrong.code, 500);
  EXPECT_TRUE(absl::StrContains(wrong.msg, "refused")) << wrong.msg;
  ASSERT_TRUE(stack_->EnsureApp("other-app").ok());
  auto other = stack_->CreateToken("other-exec", v1::ROLE_EXECUTOR, {"other-app"});
  ASSERT_TRUE(other.ok());
  XxlAdminAnswer other_app = AdminPost("/api/registry", reg, *other);
  EXPECT_EQ(other_app.code, 500);
  EXPECT_TRUE(absl::StrContains(other_app.msg, "xxl-demo")) << other_app.msg;
  // The right token registers (the executor's address must answer /beat to stay).
  StartXxl(0, token_);
  ASSERT_TRUE(AwaitOnline(0, absl::Seconds(20)).ok());
  // A callback for a run the gateway never sent is no way to settle anything.
  XxlAdminAnswer cb =
      AdminPost("/api/callback", R"([{"logId":123456,"logDateTim":1,"handleCode":200}])", *other);
  EXPECT_EQ(cb.code, 200) << cb.msg;  // Unknown run: dropped.
}

// Two XXL executors on one host with one app token: the second (here the test, posting from
// the same host with the same token, as it could) knows run ids — they are the logIds — but
// not the logDateTime the run's /run carried, so its callbacks settle nothing; the run ends
// with the result of the executor it was sent to.
TEST_F(XxlGatewayTest, ACallbackFromAnotherExecutorOnTheSameHostSettlesNothing) {
  StartXxl(0, token_);
  StartXxl(1, token_);
  ASSERT_TRUE(AwaitOnline(0, absl::Seconds(20)).ok());
  ASSERT_TRUE(AwaitOnline(1, absl::Seconds(20)).ok());
  v1::Job spec = XxlJob("victim", "sleep", "3000");
  auto job = CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(TriggerJob(job->id()).ok());
  auto running = AwaitRun(
      job->id(), [](const v1::Run& r) { return r.status() == v1::RUN_STATUS_RUNNING; },
      absl::Seconds(15));
  ASSERT_TRUE(running.ok()) << running.status();
  // Guesses of its logDateTime: the trigger time, the start time, to the millisecond.
  const int64_t trigger_ms = absl::ToUnixMillis(FromProto(running->trigger_time()));
  for (int64_t guess : {trigger_ms, trigger_ms + 1, int64_t{0}}) {
    const std::string forged =
        absl::StrCat(R"([{"logId":)", running->id(), R"(,"logDateTim":)", guess,
                     R"(,"handleCode":500,"handleMsg":"forged by a neighbour"}])");
    XxlAdminAnswer answer = AdminPost("/xxl-job-admin/api/callback", forged, token_);
    EXPECT_EQ(answer.code, 500) << guess;
    EXPECT_TRUE(absl::StrContains(answer.msg, "logDateTim")) << answer.msg;
  }
  auto ended = AwaitRun(job->id(), Ended, absl::Seconds(20));
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->status(), v1::RUN_STATUS_SUCCEEDED) << ended->result_message();
  EXPECT_FALSE(absl::StrContains(ended->result_message(), "forged"));
}

// One client holding every connection it may (16 from one IP by default) gets 503 for the next
// one at once; another client (127.0.0.2) is still served, both /healthz and the admin API.
TEST_F(XxlGatewayTest, OneClientCannotExhaustTheAdminHttpSide) {
  std::vector<int> held;
  for (int i = 0; i < 16; ++i) {
    const int fd = ConnectFrom("127.0.0.1", http_port_);
    ASSERT_GE(fd, 0) << i;
    held.push_back(fd);
  }
  // Admission is counted on the gateway's accepting thread: wait until all 16 are counted,
  // which the 17th is then refused for.
  std::string refused;
  ASSERT_TRUE(Eventually(
      [&] {
        const int fd = ConnectFrom("127.0.0.1", http_port_);
        if (fd < 0) return false;
        refused = Exchange(fd, "GET /healthz HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n");
        close(fd);
        return absl::StartsWith(refused, "HTTP/1.1 503");
      },
      absl::Seconds(10)))
      << refused;
  const int other = ConnectFrom("127.0.0.2", http_port_);
  ASSERT_GE(other, 0) << "no 127.0.0.2 on loopback";
  const std::string health =
      Exchange(other, "GET /healthz HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n");
  close(other);
  EXPECT_TRUE(absl::StartsWith(health, "HTTP/1.1 200")) << health;
  const int api = ConnectFrom("127.0.0.2", http_port_);
  ASSERT_GE(api, 0);
  const std::string body =
      R"({"registryGroup":"EXECUTOR","registryKey":"xxl-demo","registryValue":"http://127.0.0.2:1/"})";
  const std::string answer =
      Exchange(api, absl::StrCat("POST /api/registry HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n"
                                 "Content-Type: application/json\r\nContent-Length: ",
                                 body.size(), "\r\n\r\n", body));
  close(api);
  EXPECT_TRUE(absl::StrContains(answer, "missing XXL-JOB-ACCESS-TOKEN")) << answer;
  // A body announced over the limit is refused before it is sent.
  const int big = ConnectFrom("127.0.0.2", http_port_);
  ASSERT_GE(big, 0);
  const std::string too_big =
      Exchange(big,
               "POST /api/callback HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
               "Content-Length: 100000000\r\n\r\n");
  close(big);
  EXPECT_TRUE(absl::StrContains(too_big, "over the limit")) << too_big;
  for (int fd : held) close(fd);
  // Released: the first client is served again.
  ASSERT_TRUE(Eventually(
      [&] {
        const int fd = ConnectFrom("127.0.0.1", http_port_);
        if (fd < 0) return false;
        const std::string r =
            Exchange(fd, "GET /healthz HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n");
        close(fd);
        return absl::StartsWith(r, "HTTP/1.1 200");
      },
      absl::Seconds(10)));
}

TEST_F(XxlGatewayTest, ShardBroadcastOverTwoXxlExecutors) {
  StartXxl(0, token_, "2");
  StartXxl(1, token_, "3");
  ASSERT_TRUE(AwaitOnline(0, absl::Seconds(20)).ok());
  ASSERT_TRUE(AwaitOnline(1, absl::Seconds(20)).ok());
  v1::Job spec = XxlJob("shard", "shard", "");
  spec.set_routing_strategy(v1::ROUTING_STRATEGY_SHARDING_BROADCAST);
  auto job = CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(TriggerJob(job->id()).ok());
  ASSERT_TRUE(Eventually(
      [&] {
        std::vector<v1::Run> runs = Runs(job->id());
        return runs.size() == 2 && std::all_of(runs.begin(), runs.end(), [](const v1::Run& r) {
                 return r.status() == v1::RUN_STATUS_SUCCEEDED;
               });
      },
      absl::Seconds(20)));
  std::vector<v1::Run> runs = Runs(job->id());
  std::vector<int> shards;
  for (const auto& r : runs) {
    EXPECT_EQ(r.shard_total(), 2);
    shards.push_back(r.shard_index());
    const std::vector<std::string> log = RunLog(r.id());
    const std::string want = absl::StrCat("shard ", r.shard_index(), " of 2");
    EXPECT_TRUE(std::any_of(log.begin(), log.end(), [&](const std::string& l) {
      return absl::StrContains(l, want);
    })) << absl::StrJoin(log, "\n");
  }
  std::sort(shards.begin(), shards.end());
  EXPECT_EQ(shards, (std::vector<int>{0, 1}));
  EXPECT_EQ(Starts(XxlExecutions(0), job->id()).size(), 1u);
  EXPECT_EQ(Starts(XxlExecutions(1), job->id()).size(), 1u);
}

TEST_F(XxlGatewayTest, TimeoutKillDiscardAndUnknownHandler) {
  StartXxl(0, token_);
  ASSERT_TRUE(AwaitOnline(0, absl::Seconds(20)).ok());

  // Timeout: a handler that ignores interrupts, timeout 2 s.
  v1::Job slow = XxlJob("stubborn", "stubborn", "8000");
  *slow.mutable_timeout() = ToProtoDuration(absl::Seconds(2));
  auto timed = CreateJob(slow);
  ASSERT_TRUE(timed.ok()) << timed.status();
  ASSERT_TRUE(TriggerJob(timed->id()).ok());

  // Kill: an interruptible 60 s sleep.
  auto long_job = CreateJob(XxlJob("sleep", "sleep", "60000"));
  ASSERT_TRUE(long_job.ok());
  ASSERT_TRUE(TriggerJob(long_job->id()).ok());
  auto running = AwaitRun(
      long_job->id(), [](const v1::Run& r) { return r.status() == v1::RUN_STATUS_RUNNING; },
      absl::Seconds(15));
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_TRUE(Eventually([&] { return !Starts(XxlExecutions(0), long_job->id()).empty(); },
                         absl::Seconds(10)));
  v1::KillRunRequest kill;
  kill.set_id(running->id());
  v1::KillRunResponse killed;
  grpc::Status ks = admin_->KillRun(Ctx(stack_->admin_token()).get(), kill, &killed);
  ASSERT_TRUE(ks.ok()) << ks.error_message();
  auto kill_end = AwaitRun(long_job->id(), Ended, absl::Seconds(10));
  ASSERT_TRUE(kill_end.ok()) << kill_end.status();
  EXPECT_EQ(kill_end->status(), v1::RUN_STATUS_KILLED) << kill_end->result_message();
  ASSERT_TRUE(Eventually([&] { return !Ends(XxlExecutions(0), long_job->id()).empty(); },
                         absl::Seconds(10)));
  EXPECT_TRUE(Ends(XxlExecutions(0), long_job->id())[0].cancelled);

  auto timed_end = AwaitRun(timed->id(), Ended, absl::Seconds(15));
  ASSERT_TRUE(timed_end.ok()) << timed_end.status();
  EXPECT_EQ(timed_end->status(), v1::RUN_STATUS_TIMED_OUT) << timed_end->result_message();

  // Discard: DISCARD_LATER while a run of the job is running.
  v1::Job discard = XxlJob("discard", "sleep", "4000");
  discard.set_block_strategy(v1::BLOCK_STRATEGY_DISCARD_LATER);
  auto dj = CreateJob(discard);
  ASSERT_TRUE(dj.ok());
  ASSERT_TRUE(TriggerJob(dj->id()).ok());
  ASSERT_TRUE(AwaitRun(
                  dj->id(), [](const v1::Run& r) { return r.status() == v1::RUN_STATUS_RUNNING; },
                  absl::Seconds(10))
                  .ok());
  ASSERT_TRUE(TriggerJob(dj->id()).ok());
  ASSERT_TRUE(Eventually(
      [&] {
        std::vector<v1::Run> runs = Runs(dj->id());
        return runs.size() == 2 && runs[1].status() == v1::RUN_STATUS_DISCARDED;
      },
      absl::Seconds(10)));
  ASSERT_TRUE(Eventually(
      [&] {
        std::vector<v1::Run> runs = Runs(dj->id());
        return runs[0].status() == v1::RUN_STATUS_SUCCEEDED;
      },
      absl::Seconds(15)));
  EXPECT_EQ(Starts(XxlExecutions(0), dj->id()).size(), 1u);

  // A handler the XXL executor does not have: FAILED, saying so.
  auto unknown = CreateJob(XxlJob("nosuch", "nosuch", ""));
  ASSERT_TRUE(unknown.ok());
  ASSERT_TRUE(TriggerJob(unknown->id()).ok());
  auto unknown_end = AwaitRun(unknown->id(), Ended, absl::Seconds(15));
  ASSERT_TRUE(unknown_end.ok()) << unknown_end.status();
  EXPECT_EQ(unknown_end->status(), v1::RUN_STATUS_FAILED);
  EXPECT_TRUE(absl::StrContains(
      absl::StrCat(unknown_end->trigger_message(), unknown_end->result_message()), "not found"))
      << unknown_end->trigger_message() << " / " << unknown_end->result_message();
  EXPECT_TRUE(Starts(XxlExecutions(0), unknown->id()).empty());
}

TEST_F(XxlGatewayTest, KillNineOfAnXxlExecutorFailsItsRunOverToTheOther) {
  StartXxl(0, token_);
  ASSERT_TRUE(AwaitOnline(0, absl::Seconds(20)).ok());
  StartXxl(1, token_);
  ASSERT_TRUE(AwaitOnline(1, absl::Seconds(20)).ok());
  v1::Job spec = XxlJob("long", "sleep", "30000");
  spec.set_routing_strategy(v1::ROUTING_STRATEGY_FAILOVER);
  spec.set_fail_retry_count(1);
  auto job = CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(TriggerJob(job->id()).ok());
  int victim = -1;
  ASSERT_TRUE(Eventually(
      [&] {
        if (!Starts(XxlExecutions(0), job->id()).empty()) victim = 0;
        if (!Starts(XxlExecutions(1), job->id()).empty()) victim = 1;
        return victim >= 0;
      },
      absl::Seconds(15)));
  const int other = 1 - victim;
  const absl::Time killed_at = absl::Now();
  testing::Stack::KillProcess(*xxl_[victim]);
  ASSERT_TRUE(
      Eventually([&] { return absl::IsNotFound(Listed(victim).status()); }, absl::Seconds(3)))
      << "still listed 3 s after kill -9";
  const absl::Duration offline = absl::Now() - killed_at;
  ASSERT_TRUE(Eventually([&] { return !Starts(XxlExecutions(other), job->id()).empty(); },
                         absl::Seconds(5)))
      << "no retry running on the other executor 5 s after the kill";
  const absl::Duration retried = absl::Now() - killed_at;
  std::vector<v1::Run> runs = Runs(job->id());
  ASSERT_GE(runs.size(), 2u);
  EXPECT_EQ(runs[0].status(), v1::RUN_STATUS_LOST) << runs[0].result_message();
  EXPECT_EQ(Starts(XxlExecutions(victim), job->id()).size(), 1u);
  EXPECT_EQ(Starts(XxlExecutions(other), job->id()).size(), 1u);
  std::cerr << "offline after " << absl::FormatDuration(offline) << ", retry running after "
            << absl::FormatDuration(retried) << "\n";
}

}  // namespace
}  // namespace jobwheel::xxl_test
