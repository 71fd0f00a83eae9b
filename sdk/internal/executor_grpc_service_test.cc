#include "sdk/internal/executor_grpc_service.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/auth/bearer.h"
#include "common/auth/caller_token.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/client_context.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "sdk/internal/executor_metrics.h"
#include "sdk/internal/result_sink.h"
#include "sdk/internal/run_log_store.h"
#include "sdk/internal/run_manager.h"

namespace jobwheel::sdk {
namespace {

using ::jobwheel::testing::Eventually;
using ::testing::HasSubstr;

constexpr char kAddress[] = "10.0.0.7:7200";  // The executor's audience.

class CountingSink : public ResultSink {
 public:
  void Submit(const jobwheel::v1::RunResult& r) override {
    absl::MutexLock lock(&mu_);
    ids_.push_back(r.run_id());
  }
  bool Has(int64_t id) const {
    absl::MutexLock lock(&mu_);
    return std::find(ids_.begin(), ids_.end(), id) != ids_.end();
  }
  int Count(int64_t id) const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(std::count(ids_.begin(), ids_.end(), id));
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<int64_t> ids_;
};

jobwheel::v1::RunRequest MakeRun(int64_t run_id, int64_t job_id, const std::string& handler) {
  jobwheel::v1::RunRequest req;
  req.set_run_id(run_id);
  req.set_job_id(job_id);
  req.set_handler(handler);
  return req;
}

class ExecutorGrpcServiceTest : public ::testing::Test {
 protected:
  ExecutorGrpcServiceTest()
      : dir_(jobwheel::testing::TestTempDir(
            ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        metrics_(registry_),
        logs_(dir_ + "/logs", RealClock::Get()) {}

  void SetUp() override {
    ASSERT_TRUE(logs_.Init().ok());
    HandlerMap handlers;
    handlers["lines"] = [](JobContext& ctx) {
      for (int i = 1; i <= 5; ++i) ctx.Logf("payload %d", i);
      return Result::Ok();
    };
    handlers["wait"] = [this](JobContext& ctx) {
      ctx.Log("waiting");
      while (!release_.HasBeenNotified() && !ctx.cancelled()) {
        release_.WaitForNotificationWithTimeout(absl::Milliseconds(10));
      }
      return Result::Ok();
    };
    runs_ = std::make_unique<RunManager>(RunManagerOptions{}, std::move(handlers), &logs_, nullptr,
                                         &sink_, RealClock::Get(), metrics_);
    runs_->Start();
    CallerTokenVerifier::Options vo;
    vo.public_keys_pem[std::string(kIssuerDispatcher)] = dispatcher_keys_.public_pem;
    vo.public_keys_pem[std::string(kIssuerScheduler)] = scheduler_keys_.public_pem;
    vo.audience = kAddress;
    auto verifier = CallerTokenVerifier::Create(vo, RealClock::Get());
    ASSERT_TRUE(verifier.ok()) << verifier.status();
    ExecutorCallers callers;
    callers.verifier = std::move(*verifier);
    service_ = std::make_unique<ExecutorGrpcService>(runs_.get(), &logs_, callers);
    dispatcher_token_ = Sign(dispatcher_keys_, kIssuerDispatcher, kAddress);
    scheduler_token_ = Sign(scheduler_keys_, kIssuerScheduler, kAddress);
    ASSERT_FALSE(dispatcher_token_.empty());
    ASSERT_FALSE(scheduler_token_.empty());
    int port = 0;
    auto server = StartGrpcServer("127.0.0.1:0", {service_.get()}, {}, &port);
    ASSERT_TRUE(server.ok());
    server_ = std::move(*server);
    stub_ = jobwheel::v1::ExecutorService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (!release_.HasBeenNotified()) release_.Notify();
    server_->Shutdown();
    runs_->Shutdown(absl::Seconds(5), absl::Seconds(5));
  }

  static std::string Sign(const CallerKeyPair& keys, absl::string_view issuer,
                          absl::string_view audience) {
    CallerTokenSigner::Options o;
    o.issuer = std::string(issuer);
    auto signer = CallerTokenSigner::Create(keys.private_pem, o, RealClock::Get());
    if (!signer.ok()) return "";
    auto token = (*signer)->TokenFor(audience);
    return token.ok() ? *token : "";
  }

  // A dispatcher's token by default (Run, RunBatch, Beat, IdleBeat).
  std::unique_ptr<grpc::ClientContext> Ctx() { return Ctx(dispatcher_token_); }
  // The scheduler's (Kill, Log).
  std::unique_ptr<grpc::ClientContext> SchedulerCtx() { return Ctx(scheduler_token_); }
  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
    return ::jobwheel::testing::Ctx(token, absl::Seconds(5));
  }

  grpc::Status Run(int64_t run_id, int64_t job_id, const std::string& handler,
                   jobwheel::v1::RunResponse* resp) {
    return Run(run_id, job_id, handler, resp, dispatcher_token_);
  }
  grpc::Status Run(int64_t run_id, int64_t job_id, const std::string& handler,
                   jobwheel::v1::RunResponse* resp, const std::string& token) {
    jobwheel::v1::RunRequest req;
    req.set_run_id(run_id);
    req.set_job_id(job_id);
    req.set_handler(handler);
    return stub_->Run(Ctx(token).get(), req, resp);
  }

  grpc::Status Log(int64_t run_id, int from, int max, jobwheel::v1::LogResponse* resp) {
    jobwheel::v1::LogRequest req;
    req.set_run_id(run_id);
    req.set_from_line(from);
    req.set_max_lines(max);
    return stub_->Log(SchedulerCtx().get(), req, resp);
  }

  const CallerKeyPair dispatcher_keys_ = *GenerateCallerKeyPair();
  const CallerKeyPair scheduler_keys_ = *GenerateCallerKeyPair();
  std::string dispatcher_token_;
  std::string scheduler_token_;
  std::string dir_;
  prometheus::Registry registry_;
  ExecutorMetrics metrics_;
  RunLogStore logs_;
  CountingSink sink_;
  absl::Notification release_;
  std::unique_ptr<RunManager> runs_;
  std::unique_ptr<ExecutorGrpcService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<jobwheel::v1::ExecutorService::Stub> stub_;
};

TEST_F(ExecutorGrpcServiceTest, EveryCallNeedsACallerToken) {
  jobwheel::v1::RunResponse run;
  EXPECT_EQ(Run(1, 1, "lines", &run, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Run(1, 1, "lines", &run, "wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(runs_->IsActive(1));
  jobwheel::v1::KillRequest kill;
  kill.set_run_id(1);
  jobwheel::v1::KillResponse kill_resp;
  EXPECT_EQ(stub_->Kill(Ctx("").get(), kill, &kill_resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  jobwheel::v1::BeatResponse beat;
  EXPECT_EQ(stub_->Beat(Ctx("").get(), {}, &beat).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(stub_->Beat(Ctx().get(), {}, &beat).ok());
  jobwheel::v1::IdleBeatRequest idle;
  idle.set_job_id(1);
  jobwheel::v1::IdleBeatResponse idle_resp;
  EXPECT_EQ(stub_->IdleBeat(Ctx("").get(), idle, &idle_resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  jobwheel::v1::LogRequest log;
  log.set_run_id(1);
  jobwheel::v1::LogResponse log_resp;
  EXPECT_EQ(stub_->Log(Ctx("").get(), log, &log_resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(ExecutorGrpcServiceTest, RunKillIdleBeat) {
  jobwheel::v1::RunResponse resp;
  ASSERT_TRUE(Run(1, 9, "wait", &resp).ok());
  EXPECT_EQ(resp.disposition(), jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(Run(2, 9, "wait", &resp).ok());
  EXPECT_EQ(resp.disposition(), jobwheel::v1::RUN_DISPOSITION_QUEUED);
  ASSERT_TRUE(Run(3, 10, "missing", &resp).ok());
  EXPECT_EQ(resp.disposition(), jobwheel::v1::RUN_DISPOSITION_REJECTED);
  grpc::Status bad = Run(0, 9, "wait", &resp);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("run_id"));

  jobwheel::v1::IdleBeatRequest idle;
  idle.set_job_id(9);
  jobwheel::v1::IdleBeatResponse idle_resp;
  ASSERT_TRUE(stub_->IdleBeat(Ctx().get(), idle, &idle_resp).ok());
  EXPECT_FALSE(idle_resp.idle());
  EXPECT_EQ(idle_resp.running() + idle_resp.queued(), 2);
  idle.set_job_id(11);
  ASSERT_TRUE(stub_->IdleBeat(Ctx().get(), idle, &idle_resp).ok());
  EXPECT_TRUE(idle_resp.idle());
  idle.set_job_id(0);
  EXPECT_EQ(stub_->IdleBeat(Ctx().get(), idle, &idle_resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  jobwheel::v1::KillRequest kill;
  kill.set_run_id(2);
  jobwheel::v1::KillResponse kill_resp;
  ASSERT_TRUE(stub_->Kill(SchedulerCtx().get(), kill, &kill_resp).ok());
  EXPECT_TRUE(kill_resp.killed());
  kill.set_run_id(424242);
  ASSERT_TRUE(stub_->Kill(SchedulerCtx().get(), kill, &kill_resp).ok());
  EXPECT_FALSE(kill_resp.killed());
  EXPECT_THAT(kill_resp.message(), HasSubstr("424242"));
  kill.set_run_id(-1);
  EXPECT_EQ(stub_->Kill(SchedulerCtx().get(), kill, &kill_resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ExecutorGrpcServiceTest, EachIssuerMayCallOnlyItsOwnRpcs) {
  // The scheduler's token: Kill and Log only.
  jobwheel::v1::RunResponse run;
  grpc::Status s = Run(60, 60, "lines", &run, scheduler_token_);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("ExecutorService.Run"));
  EXPECT_THAT(s.error_message(), HasSubstr("scheduler"));
  jobwheel::v1::RunBatchRequest batch;
  *batch.add_runs() = MakeRun(61, 61, "lines");
  jobwheel::v1::RunBatchResponse batch_resp;
  EXPECT_EQ(stub_->RunBatch(SchedulerCtx().get(), batch, &batch_resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  jobwheel::v1::BeatResponse beat;
  EXPECT_EQ(stub_->Beat(SchedulerCtx().get(), {}, &beat).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  jobwheel::v1::IdleBeatRequest idle;
  idle.set_job_id(1);
  jobwheel::v1::IdleBeatResponse idle_resp;
  EXPECT_EQ(stub_->IdleBeat(SchedulerCtx().get(), idle, &idle_resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Nothing was submitted ("lines" would have run and been reported).
  EXPECT_FALSE(runs_->IsActive(60));
  EXPECT_FALSE(runs_->IsActive(61));
  EXPECT_FALSE(sink_.Has(60));
  EXPECT_FALSE(sink_.Has(61));

  // The dispatcher's token: Run, RunBatch, Beat, IdleBeat; never Kill or Log.
  ASSERT_TRUE(Run(62, 62, "wait", &run).ok());
  EXPECT_EQ(run.disposition(), jobwheel::v1::RUN_DISPOSITION_STARTED);
  jobwheel::v1::KillRequest kill;
  kill.set_run_id(62);
  jobwheel::v1::KillResponse kill_resp;
  s = stub_->Kill(Ctx().get(), kill, &kill_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("ExecutorService.Kill"));
  EXPECT_TRUE(runs_->IsActive(62));  // Not killed.
  jobwheel::v1::LogRequest log;
  log.set_run_id(62);
  jobwheel::v1::LogResponse log_resp;
  EXPECT_EQ(stub_->Log(Ctx().get(), log, &log_resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(log_resp.lines_size(), 0);
  EXPECT_TRUE(stub_->Beat(Ctx().get(), {}, &beat).ok());
  EXPECT_TRUE(stub_->IdleBeat(Ctx().get(), idle, &idle_resp).ok());
  // And the scheduler may kill it and read its log.
  ASSERT_TRUE(stub_->Kill(SchedulerCtx().get(), kill, &kill_resp).ok());
  EXPECT_TRUE(kill_resp.killed());
  EXPECT_TRUE(stub_->Log(SchedulerCtx().get(), log, &log_resp).ok());

  // A token of either issuer for another executor's address is no token at all.
  const std::string elsewhere = Sign(dispatcher_keys_, kIssuerDispatcher, "10.0.0.8:7200");
  EXPECT_EQ(Run(63, 63, "lines", &run, elsewhere).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // A key pair of one issuer cannot pass as the other.
  const std::string forged = Sign(dispatcher_keys_, kIssuerScheduler, kAddress);
  EXPECT_EQ(stub_->Kill(Ctx(forged).get(), kill, &kill_resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST(ExecutorRpcIssuerTest, DispatcherRunsAndProbesSchedulerKillsAndReadsLogs) {
  EXPECT_EQ(ExecutorRpcIssuer(ExecutorRpc::kRun), kIssuerDispatcher);
  EXPECT_EQ(ExecutorRpcIssuer(ExecutorRpc::kRunBatch), kIssuerDispatcher);
  EXPECT_EQ(ExecutorRpcIssuer(ExecutorRpc::kBeat), kIssuerDispatcher);
  EXPECT_EQ(ExecutorRpcIssuer(ExecutorRpc::kIdleBeat), kIssuerDispatcher);
  EXPECT_EQ(ExecutorRpcIssuer(ExecutorRpc::kKill), kIssuerScheduler);
  EXPECT_EQ(ExecutorRpcIssuer(ExecutorRpc::kLog), kIssuerScheduler);
  EXPECT_EQ(ExecutorRpcIssuer(ExecutorRpc::kGetRuns), kIssuerDispatcher);
}

TEST_F(ExecutorGrpcServiceTest, DuplicateRunBatchOfOneRunIdRunsItOnce) {
  jobwheel::v1::RunBatchRequest batch;
  *batch.add_runs() = MakeRun(71, 40, "lines");
  *batch.add_runs() = MakeRun(71, 40, "lines");  // The same id twice in one batch.
  jobwheel::v1::RunBatchResponse resp;
  ASSERT_TRUE(stub_->RunBatch(Ctx().get(), batch, &resp).ok());
  ASSERT_EQ(resp.responses_size(), 2);
  EXPECT_EQ(resp.responses(0).disposition(), jobwheel::v1::RUN_DISPOSITION_STARTED);
  EXPECT_NE(resp.responses(1).disposition(), jobwheel::v1::RUN_DISPOSITION_REJECTED);
  ASSERT_TRUE(Eventually([&] { return sink_.Has(71) && !runs_->IsActive(71); }, absl::Seconds(10)));
  // The trigger sent again (its first answer lost): answered, not run again.
  ASSERT_TRUE(stub_->RunBatch(Ctx().get(), batch, &resp).ok());
  EXPECT_THAT(resp.responses(0).message(), HasSubstr("already ran"));
  auto page = logs_.Read(71, 1, 1000);
  ASSERT_TRUE(page.ok()) << page.status();
  int payloads = 0;
  for (const std::string& line : page->lines)
    payloads += line.find("payload 1") != std::string::npos;
  EXPECT_EQ(payloads, 1);
  EXPECT_EQ(sink_.Count(71), 1);
}

TEST_F(ExecutorGrpcServiceTest, GetRunsFencesThenALateRunBatchIsRejected) {
  jobwheel::v1::GetRunsRequest get;
  get.add_run_ids(81);
  get.add_run_ids(82);
  get.set_fence(true);
  jobwheel::v1::RunBatchRequest first;
  *first.add_runs() = MakeRun(82, 41, "wait");
  jobwheel::v1::RunBatchResponse batch_resp;
  ASSERT_TRUE(stub_->RunBatch(Ctx().get(), first, &batch_resp).ok());
  jobwheel::v1::GetRunsResponse resp;
  grpc::Status s = stub_->GetRuns(Ctx().get(), get, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.runs_size(), 2);
  EXPECT_EQ(resp.runs(0).run_id(), 81);
  EXPECT_EQ(resp.runs(0).presence(), jobwheel::v1::RUN_PRESENCE_FENCED);
  EXPECT_EQ(resp.runs(1).run_id(), 82);
  // Accepted: queued for a run thread or running already.
  EXPECT_THAT(resp.runs(1).presence(), ::testing::AnyOf(jobwheel::v1::RUN_PRESENCE_QUEUED,
                                                        jobwheel::v1::RUN_PRESENCE_RUNNING));

  // The trigger that was lost on its way arrives late: refused, never run.
  jobwheel::v1::RunBatchRequest late;
  *late.add_runs() = MakeRun(81, 42, "lines");
  ASSERT_TRUE(stub_->RunBatch(Ctx().get(), late, &batch_resp).ok());
  ASSERT_EQ(batch_resp.responses_size(), 1);
  EXPECT_EQ(batch_resp.responses(0).disposition(), jobwheel::v1::RUN_DISPOSITION_REJECTED);
  EXPECT_THAT(batch_resp.responses(0).message(), HasSubstr("fenced"));
  EXPECT_FALSE(runs_->IsActive(81));
  EXPECT_FALSE(logs_.Read(81, 1, 10).ok());
  EXPECT_FALSE(sink_.Has(81));
}

TEST_F(ExecutorGrpcServiceTest, GetRunsValidatesAndIsTheDispatchersRpc) {
  jobwheel::v1::GetRunsRequest get;
  for (int i = 1; i <= ExecutorGrpcService::kMaxGetRuns + 1; ++i) get.add_run_ids(i);
  jobwheel::v1::GetRunsResponse resp;
  grpc::Status s = stub_->GetRuns(Ctx().get(), get, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("run_ids"));
  jobwheel::v1::GetRunsRequest bad;
  bad.add_run_ids(5);
  bad.add_run_ids(-1);
  s = stub_->GetRuns(Ctx().get(), bad, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("run_ids[1]"));
  jobwheel::v1::GetRunsRequest ok;
  ok.add_run_ids(5);
  EXPECT_EQ(stub_->GetRuns(SchedulerCtx().get(), ok, &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(stub_->GetRuns(Ctx("").get(), ok, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  s = stub_->GetRuns(Ctx().get(), ok, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.runs_size(), 1);
  EXPECT_EQ(resp.runs(0).presence(), jobwheel::v1::RUN_PRESENCE_NOT_SEEN);
}

TEST_F(ExecutorGrpcServiceTest, RunBatchAnswersEveryRunInOrder) {
  jobwheel::v1::RunBatchRequest batch;
  *batch.add_runs() = MakeRun(21, 30, "wait");     // STARTED
  *batch.add_runs() = MakeRun(22, 30, "wait");     // QUEUED behind 21
  *batch.add_runs() = MakeRun(23, 31, "missing");  // REJECTED: no such handler
  *batch.add_runs() = MakeRun(0, 32, "lines");     // REJECTED: malformed
  *batch.add_runs() = MakeRun(25, 0, "lines");     // REJECTED: malformed
  *batch.add_runs() = MakeRun(26, 33, "lines");    // STARTED, despite the bad ones before it
  jobwheel::v1::RunBatchResponse resp;
  grpc::Status s = stub_->RunBatch(Ctx().get(), batch, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.responses_size(), 6);
  EXPECT_EQ(resp.responses(0).disposition(), jobwheel::v1::RUN_DISPOSITION_STARTED);
  EXPECT_EQ(resp.responses(1).disposition(), jobwheel::v1::RUN_DISPOSITION_QUEUED);
  EXPECT_EQ(resp.responses(2).disposition(), jobwheel::v1::RUN_DISPOSITION_REJECTED);
  EXPECT_THAT(resp.responses(2).message(), HasSubstr("\"missing\" is not registered"));
  EXPECT_EQ(resp.responses(3).disposition(), jobwheel::v1::RUN_DISPOSITION_REJECTED);
  EXPECT_THAT(resp.responses(3).message(), HasSubstr("runs[3].run_id: must be positive"));
  EXPECT_EQ(resp.responses(4).disposition(), jobwheel::v1::RUN_DISPOSITION_REJECTED);
  EXPECT_EQ(resp.responses(4).message(), "runs[4].job_id: must be positive (run 25)");
  EXPECT_EQ(resp.responses(5).disposition(), jobwheel::v1::RUN_DISPOSITION_STARTED);
  EXPECT_TRUE(runs_->IsActive(21));
  EXPECT_TRUE(runs_->IsActive(22));
  EXPECT_FALSE(runs_->IsActive(23));
  EXPECT_FALSE(runs_->IsActive(25));
  ASSERT_TRUE(Eventually([&] { return sink_.Has(26); }, absl::Seconds(10)));

  // A repeated batch is answered as repeated Run calls are: nothing runs twice.
  jobwheel::v1::RunBatchRequest again;
  *again.add_runs() = MakeRun(21, 30, "wait");
  ASSERT_TRUE(stub_->RunBatch(Ctx().get(), again, &resp).ok());
  ASSERT_EQ(resp.responses_size(), 1);
  EXPECT_EQ(resp.responses(0).disposition(), jobwheel::v1::RUN_DISPOSITION_STARTED);
  EXPECT_THAT(resp.responses(0).message(), HasSubstr("already accepted"));
}

TEST_F(ExecutorGrpcServiceTest, RunBatchRefusesEmptyOversizedAndUnauthenticatedCalls) {
  jobwheel::v1::RunBatchResponse resp;
  jobwheel::v1::RunBatchRequest empty;
  grpc::Status s = stub_->RunBatch(Ctx().get(), empty, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("runs: must not be empty"));

  jobwheel::v1::RunBatchRequest big;
  for (int i = 1; i <= ExecutorGrpcService::kMaxBatchRuns + 1; ++i) {
    *big.add_runs() = MakeRun(1000 + i, 40, "wait");
  }
  s = stub_->RunBatch(Ctx().get(), big, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("runs: at most 1000 per call, got 1001"));
  // Refused as a whole: nothing was submitted (a "wait" run would still be running).
  EXPECT_FALSE(runs_->IsActive(1001));

  jobwheel::v1::RunBatchRequest one;
  *one.add_runs() = MakeRun(50, 41, "wait");
  EXPECT_EQ(stub_->RunBatch(Ctx("").get(), one, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(stub_->RunBatch(Ctx("wrong").get(), one, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(runs_->IsActive(50));  // A "wait" run would still be running.
}

TEST_F(ExecutorGrpcServiceTest, LogPagesAndSaysWhenTheRunEnded) {
  jobwheel::v1::RunResponse resp;
  ASSERT_TRUE(Run(5, 1, "wait", &resp).ok());
  jobwheel::v1::LogResponse log;
  ASSERT_TRUE(Eventually(
      [&] {
        return Log(5, 0, 0, &log).ok() && !log.lines().empty() &&
               log.lines(log.lines_size() - 1).find("waiting") != std::string::npos;
      },
      absl::Seconds(10)));
  EXPECT_FALSE(log.end());  // Still running.
  release_.Notify();
  ASSERT_TRUE(Eventually([&] { return sink_.Has(5); }, absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] { return !runs_->IsActive(5); }, absl::Seconds(10)));

  ASSERT_TRUE(Run(6, 2, "lines", &resp).ok());
  ASSERT_TRUE(Eventually([&] { return !runs_->IsActive(6) && sink_.Has(6); }, absl::Seconds(10)));
  ASSERT_TRUE(Log(6, 0, 0, &log).ok());
  const int total = log.lines_size();
  EXPECT_TRUE(log.end());
  EXPECT_EQ(log.from_line(), 1);
  EXPECT_EQ(log.to_line(), total);
  // accepted, started, 5 payload lines, ended.
  EXPECT_EQ(total, 8);
  ASSERT_TRUE(Log(6, 3, 2, &log).ok());
  ASSERT_EQ(log.lines_size(), 2);
  EXPECT_THAT(log.lines(0), HasSubstr("payload 1"));
  EXPECT_THAT(log.lines(1), HasSubstr("payload 2"));
  EXPECT_EQ(log.from_line(), 3);
  EXPECT_EQ(log.to_line(), 4);
  EXPECT_FALSE(log.end());
  ASSERT_TRUE(Log(6, total + 1, 10, &log).ok());
  EXPECT_EQ(log.lines_size(), 0);
  EXPECT_TRUE(log.end());

  EXPECT_EQ(Log(999, 1, 10, &log).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Log(0, 1, 10, &log).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Log(6, -1, 10, &log).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Log(6, 1, -1, &log).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace jobwheel::sdk
