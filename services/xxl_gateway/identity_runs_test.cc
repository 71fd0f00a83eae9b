#include "services/xxl_gateway/identity_runs.h"

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/xxl_gateway/gateway_metrics.h"
#include "services/xxl_gateway/run_ledger.h"
#include "services/xxl_gateway/state_dir.h"

namespace jobwheel::xxl {
namespace {

namespace v1 = jobwheel::v1;

// Records every call; answers /run with `run_reply` (or `run_status` when not OK).
class FakeXxl : public XxlClient {
 public:
  absl::StatusOr<std::string> Post(const std::string& base, absl::string_view path,
                                   const std::string& body, const std::string& token,
                                   absl::Duration) override {
    absl::MutexLock lock(&mu);
    calls.push_back(absl::StrCat(path, " ", body));
    EXPECT_EQ(token, "tok");
    EXPECT_EQ(base, "http://127.0.0.1:9999");
    if (path == "/run") {
      if (!run_status.ok()) return run_status;
      return run_reply;
    }
    if (path == "/log") return log_reply;
    return std::string(R"({"code":200})");
  }
  int Count(absl::string_view prefix) {
    absl::MutexLock lock(&mu);
    int n = 0;
    for (const auto& c : calls) n += absl::StartsWith(c, prefix) ? 1 : 0;
    return n;
  }
  absl::Mutex mu;
  std::vector<std::string> calls;
  absl::Status run_status = absl::OkStatus();
  std::string run_reply = R"({"code":200})";
  std::string log_reply;
};

class FakeSink : public ResultSink {
 public:
  absl::StatusOr<ReportOutcome> Report(const std::string& token,
                                       const std::vector<v1::RunResult>& results) override {
    EXPECT_EQ(token, "tok");
    if (down) return absl::UnavailableError("dispatcher down");
    ReportOutcome out;
    for (const auto& r : results) {
      got.push_back(r);
      out.acked.push_back(r.run_id());
    }
    return out;
  }
  const v1::RunResult* Of(int64_t run_id) const {
    for (const auto& r : got) {
      if (r.run_id() == run_id) return &r;
    }
    return nullptr;
  }
  bool down = false;
  std::vector<v1::RunResult> got;
};

class IdentityRunsTest : public ::testing::Test {
 protected:
  IdentityRunsTest() : state_(""), ledger_(state_), metrics_(registry_), runs_(MakeRuns()) {}

  std::unique_ptr<IdentityRuns> MakeRuns(bool scripts = false) {
    IdentityInfo info{"demo http://127.0.0.1:9999",
                      "demo",
                      "http://127.0.0.1:9999",
                      "tok",
                      "127.0.0.1:7300",
                      "inst"};
    IdentityRunsOptions options;
    options.allow_scripts = scripts;
    return std::make_unique<IdentityRuns>(info, options, ledger_, xxl_, sink_, metrics_, clock_,
                                          [](std::function<void()> f) { f(); });
  }

  v1::RunRequest Req(int64_t run, int64_t job,
                     v1::BlockStrategy block = v1::BLOCK_STRATEGY_SERIAL_EXECUTION) {
    v1::RunRequest r;
    r.set_run_id(run);
    r.set_job_id(job);
    r.set_handler("echo");
    r.set_app("demo");
    r.set_executor_instance("inst");
    r.set_block_strategy(block);
    r.set_result_key("key");
    return r;
  }

  v1::RunDisposition Submit(const v1::RunRequest& r) {
    auto out = runs_->Submit(r);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? out->disposition() : v1::RUN_DISPOSITION_UNSPECIFIED;
  }

  // The logDateTime the /run of `run` carried (0 when it was not sent).
  int64_t SentLogDateTime(int64_t run) {
    absl::MutexLock lock(&xxl_.mu);
    const std::string key = absl::StrCat(R"("logId":)", run, R"(,"logDateTime":)");
    for (const std::string& c : xxl_.calls) {
      const size_t at = c.find(key);
      if (!absl::StartsWith(c, "/run ") || at == std::string::npos) continue;
      int64_t v = 0;
      const std::string rest = c.substr(at + key.size());
      if (absl::SimpleAtoi(rest.substr(0, rest.find_first_not_of("0123456789")), &v)) return v;
    }
    return 0;
  }

  HandleCallbackParam Item(int64_t run, int code, const std::string& msg = "") {
    HandleCallbackParam p;
    p.set_log_id(run);
    p.set_log_date_tim(SentLogDateTime(run));  // As an executor echoes it.
    p.set_handle_code(code);
    p.set_handle_msg(msg);
    return p;
  }

  absl::Status Callback(int64_t run, int code, const std::string& msg = "") {
    return runs_->OnCallback(Item(run, code, msg));
  }

  SimulatedClock clock_;
  StateDir state_;
  RunLedger ledger_;
  prometheus::Registry registry_;
  GatewayMetrics metrics_;
  FakeXxl xxl_;
  FakeSink sink_;
  std::unique_ptr<IdentityRuns> runs_;
};

TEST_F(IdentityRunsTest, RunIsSentOnceAndItsCallbackReportedWithTheResultKey) {
  EXPECT_EQ(Submit(Req(1, 7)), v1::RUN_DISPOSITION_STARTED);
  EXPECT_EQ(Submit(Req(1, 7)), v1::RUN_DISPOSITION_STARTED);  // Known: not sent again.
  EXPECT_EQ(xxl_.Count("/run"), 1);
  EXPECT_TRUE(absl::StrContains(xxl_.calls[0], R"("logId":1)")) << xxl_.calls[0];
  EXPECT_TRUE(absl::StrContains(xxl_.calls[0], R"("glueType":"BEAN")"));
  ASSERT_TRUE(Callback(1, 200).ok());
  ASSERT_NE(sink_.Of(1), nullptr);
  EXPECT_EQ(sink_.Of(1)->status(), v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(sink_.Of(1)->result_key(), "key");
  EXPECT_EQ(sink_.Of(1)->executor_address(), "127.0.0.1:7300");
  EXPECT_EQ(Submit(Req(1, 7)), v1::RUN_DISPOSITION_STARTED);
  EXPECT_EQ(xxl_.Count("/run"), 1);
}

TEST_F(IdentityRunsTest, CodesMapToStatuses) {
  Submit(Req(1, 1));
  Submit(Req(2, 2));
  Submit(Req(3, 3));
  Callback(1, 502, "job execute timeout ");
  Callback(2, 500, "boom");
  Callback(3, 3);
  EXPECT_EQ(sink_.Of(1)->status(), v1::RUN_STATUS_TIMED_OUT);
  EXPECT_EQ(sink_.Of(2)->status(), v1::RUN_STATUS_FAILED);
  EXPECT_EQ(sink_.Of(2)->message(), "boom");
  EXPECT_EQ(sink_.Of(3)->status(), v1::RUN_STATUS_FAILED);
  EXPECT_EQ(sink_.Of(3)->code(), 3);
}

TEST_F(IdentityRunsTest, OtherAppOrInstanceOrGlueIsRejected) {
  v1::RunRequest other = Req(1, 1);
  other.set_app("billing");
  EXPECT_EQ(Submit(other), v1::RUN_DISPOSITION_REJECTED);
  other = Req(2, 1);
  other.set_executor_instance("someone-else");
  EXPECT_EQ(Submit(other), v1::RUN_DISPOSITION_REJECTED);
  other = Req(3, 1);
  other.set_glue_type(v1::GLUE_TYPE_SCRIPT_SHELL);
  auto out = runs_->Submit(other);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->disposition(), v1::RUN_DISPOSITION_REJECTED);
  EXPECT_TRUE(absl::StrContains(out->message(), "--script_apps")) << out->message();
  other = Req(4, int64_t{1} << 33);
  EXPECT_EQ(Submit(other), v1::RUN_DISPOSITION_REJECTED);
  EXPECT_EQ(xxl_.Count("/run"), 0);
}

TEST_F(IdentityRunsTest, SerialQueuesInTheGatewayAndSendsTheNextAfterTheCallback) {
  EXPECT_EQ(Submit(Req(1, 5)), v1::RUN_DISPOSITION_STARTED);
  EXPECT_EQ(Submit(Req(2, 5)), v1::RUN_DISPOSITION_QUEUED);
  EXPECT_EQ(Submit(Req(3, 6)), v1::RUN_DISPOSITION_STARTED);  // Another job: its own lane.
  EXPECT_EQ(xxl_.Count("/run"), 2);
  EXPECT_EQ(runs_->JobLoad(5).queued, 1);
  Callback(1, 200);
  EXPECT_EQ(xxl_.Count("/run"), 3);
  EXPECT_TRUE(absl::StrContains(xxl_.calls.back(), R"("logId":2)"));
}

TEST_F(IdentityRunsTest, KillOfAQueuedRunDropsItAndOfTheRunningOneKillsOnXxl) {
  Submit(Req(1, 5));
  Submit(Req(2, 5));
  v1::KillResponse k = runs_->Kill(2, "by test");
  EXPECT_TRUE(k.killed());
  EXPECT_EQ(xxl_.Count("/kill"), 0);
  EXPECT_EQ(sink_.Of(2)->status(), v1::RUN_STATUS_KILLED);
  k = runs_->Kill(1, "by test");
  EXPECT_TRUE(k.killed());
  EXPECT_EQ(xxl_.Count("/kill"), 1);
  EXPECT_EQ(sink_.Of(1)->status(), v1::RUN_STATUS_KILLED);
  // The late callback of the killed run changes nothing and is acknowledged.
  EXPECT_TRUE(Callback(1, 500, "interrupted").ok());
  EXPECT_EQ(sink_.got.size(), 2u);
  EXPECT_FALSE(runs_->Kill(1, "again").killed());
}

TEST_F(IdentityRunsTest, DiscardLaterAndCoverEarly) {
  Submit(Req(1, 5));
  EXPECT_EQ(Submit(Req(2, 5, v1::BLOCK_STRATEGY_DISCARD_LATER)), v1::RUN_DISPOSITION_DISCARDED);
  EXPECT_EQ(xxl_.Count("/run"), 1);
  EXPECT_EQ(Submit(Req(3, 5, v1::BLOCK_STRATEGY_COVER_EARLY)), v1::RUN_DISPOSITION_STARTED);
  EXPECT_EQ(xxl_.Count("/kill"), 1);
  EXPECT_EQ(xxl_.Count("/run"), 2);
  EXPECT_EQ(sink_.Of(1)->status(), v1::RUN_STATUS_KILLED);
  EXPECT_TRUE(absl::StrContains(sink_.Of(1)->message(), "covered by run 3"));
}

TEST_F(IdentityRunsTest, XxlRefusalsMapToDispositions) {
  xxl_.run_reply = R"({"code":500,"msg":"job handler [nope] not found."})";
  auto out = runs_->Submit(Req(1, 5));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->disposition(), v1::RUN_DISPOSITION_REJECTED);
  EXPECT_TRUE(absl::StrContains(out->message(), "not found")) << out->message();
  xxl_.run_reply = R"({"code":500,"msg":"block strategy effect：Discard Later"})";
  EXPECT_EQ(Submit(Req(2, 5)), v1::RUN_DISPOSITION_DISCARDED);
  xxl_.run_status = absl::DeadlineExceededError("no answer");
  EXPECT_TRUE(absl::IsDeadlineExceeded(runs_->Submit(Req(3, 5)).status()));
  v1::GetRunsRequest q;
  q.add_run_ids(3);
  EXPECT_EQ(runs_->GetRuns(q).runs(0).presence(), v1::RUN_PRESENCE_RUNNING);
}

TEST_F(IdentityRunsTest, FencedRunIsNeverSent) {
  v1::GetRunsRequest q;
  q.add_run_ids(9);
  q.set_fence(true);
  EXPECT_EQ(runs_->GetRuns(q).runs(0).presence(), v1::RUN_PRESENCE_FENCED);
  EXPECT_EQ(Submit(Req(9, 1)), v1::RUN_DISPOSITION_REJECTED);
  EXPECT_EQ(xxl_.Count("/run"), 0);
}

TEST_F(IdentityRunsTest, TimeoutKillsAndReportsTimedOut) {
  v1::RunRequest r = Req(1, 5);
  *r.mutable_timeout() = ToProtoDuration(absl::Milliseconds(1500));
  Submit(r);
  EXPECT_TRUE(absl::StrContains(xxl_.calls[0], R"("executorTimeout":2)")) << xxl_.calls[0];
  clock_.Advance(absl::Seconds(3));
  runs_->Tick();
  EXPECT_TRUE(sink_.Of(1) == nullptr);
  clock_.Advance(absl::Seconds(1));
  runs_->Tick();
  ASSERT_NE(sink_.Of(1), nullptr);
  EXPECT_EQ(sink_.Of(1)->status(), v1::RUN_STATUS_TIMED_OUT);
  EXPECT_EQ(xxl_.Count("/kill"), 1);
}

TEST_F(IdentityRunsTest, CallbackWhileTheDispatcherIsDownIsUnavailableThenRetried) {
  Submit(Req(1, 5));
  sink_.down = true;
  EXPECT_TRUE(absl::IsUnavailable(Callback(1, 200)));
  EXPECT_TRUE(absl::IsUnavailable(Callback(1, 200)));  // The executor's retry: still down.
  sink_.down = false;
  EXPECT_TRUE(Callback(1, 200).ok());
  EXPECT_EQ(sink_.got.size(), 1u);
  EXPECT_TRUE(Callback(1, 200).ok());  // Settled: acknowledged without a new report.
  EXPECT_EQ(sink_.got.size(), 1u);
}

TEST_F(IdentityRunsTest, CallbackForARunOfAnotherIdentityIsRefused) {
  EXPECT_TRUE(absl::IsPermissionDenied(Callback(42, 200)));
}

// Another executor on the same host with the same token knows the logId (the run id) but not
// the logDateTime its /run carried: its callback settles nothing.
TEST_F(IdentityRunsTest, CallbackWithoutTheRunsLogDateTimeIsRefusedAndSettlesNothing) {
  Submit(Req(1, 5));
  const int64_t sent = SentLogDateTime(1);
  ASSERT_NE(sent, 0);
  EXPECT_LE(sent, 1700000000000);
  EXPECT_GT(sent, 1700000000000 - absl::ToInt64Milliseconds(absl::Minutes(10)));
  for (int64_t guess : {int64_t{0}, int64_t{1700000000000}, sent + 1, sent - 1}) {
    HandleCallbackParam forged = Item(1, 500, "forged");
    forged.set_log_date_tim(guess);
    int refused = 0;
    EXPECT_TRUE(absl::IsPermissionDenied(runs_->OnCallbacks({forged}, &refused))) << guess;
    EXPECT_EQ(refused, 1);
  }
  EXPECT_TRUE(sink_.got.empty());
  EXPECT_EQ(runs_->TotalLoad().running, 1);  // Still running, still its executor's to settle.
  EXPECT_TRUE(Callback(1, 200).ok());
  ASSERT_NE(sink_.Of(1), nullptr);
  EXPECT_EQ(sink_.Of(1)->status(), v1::RUN_STATUS_SUCCEEDED);
}

TEST_F(IdentityRunsTest, ABatchOfCallbacksIsReportedTogetherAndAForgedItemRefusedAlone) {
  Submit(Req(1, 5));
  Submit(Req(2, 6));
  HandleCallbackParam forged = Item(2, 500, "forged");
  forged.set_log_date_tim(SentLogDateTime(2) + 7);
  int refused = 0;
  EXPECT_TRUE(absl::IsPermissionDenied(
      runs_->OnCallbacks({Item(1, 200), forged, Item(99, 200)}, &refused)));
  EXPECT_EQ(refused, 2);  // The forged item and the run never sent here.
  ASSERT_EQ(sink_.got.size(), 1u);
  EXPECT_EQ(sink_.got[0].run_id(), 1);
  EXPECT_TRUE(runs_->OnCallbacks({Item(2, 200)}, &refused).ok());
  EXPECT_EQ(sink_.got.size(), 2u);
}

TEST_F(IdentityRunsTest, LogTranslatesLines) {
  Submit(Req(1, 5));
  xxl_.log_reply =
      R"({"code":200,"content":{"fromLineNum":2,"toLineNum":3,"logContent":"b\r\nc\n","isEnd":false}})";
  v1::LogRequest q;
  q.set_run_id(1);
  q.set_from_line(2);
  auto page = runs_->Log(q);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->lines_size(), 2);
  EXPECT_EQ(page->lines(0), "b");
  EXPECT_EQ(page->lines(1), "c");
  EXPECT_EQ(page->from_line(), 2);
  EXPECT_EQ(page->to_line(), 3);
  EXPECT_TRUE(absl::StrContains(xxl_.calls.back(), R"("logDateTim":)"));
}

TEST_F(IdentityRunsTest, RestoreRebuildsLanesFromTheLedger) {
  Submit(Req(1, 5));
  Submit(Req(2, 5));
  runs_ = MakeRuns();  // A restarted gateway, same ledger.
  runs_->Restore();
  EXPECT_EQ(runs_->JobLoad(5).running, 1);
  EXPECT_EQ(runs_->JobLoad(5).queued, 1);
  Callback(1, 200);
  EXPECT_EQ(xxl_.Count("/run"), 2);
}

// A result whose report failed (the dispatcher was down) is reported again by Tick, but not
// while its own path may still be reporting it (within 500 ms of its end); once acknowledged,
// Tick sends it no more.
TEST_F(IdentityRunsTest, TickReportsAFailedReportAgainAfterItsEnd) {
  Submit(Req(1, 5));
  sink_.down = true;
  EXPECT_TRUE(runs_->Kill(1, "test").killed());
  sink_.down = false;
  runs_->Tick();
  EXPECT_EQ(sink_.Of(1), nullptr);
  clock_.Advance(absl::Milliseconds(600));
  runs_->Tick();
  ASSERT_NE(sink_.Of(1), nullptr);
  EXPECT_EQ(sink_.Of(1)->status(), v1::RUN_STATUS_KILLED);
  clock_.Advance(absl::Seconds(2));
  runs_->Tick();
  EXPECT_EQ(sink_.got.size(), 1u);
}

}  // namespace
}  // namespace jobwheel::xxl
