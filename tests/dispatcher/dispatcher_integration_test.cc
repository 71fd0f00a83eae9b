// The dispatcher with real processes: PostgreSQL, the registry, the dispatcher and three demo
// executors, started through testing::Stack (no scheduler). The test plays the scheduler: it
// writes job and fire rows and calls Dispatch.
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "pqxx/pqxx"
#include "services/dispatcher/dispatch_test_util.h"
#include "tests/dispatcher/dispatch_as_scheduler.h"

namespace jobwheel::dispatcher {
namespace {

using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::Stack;
using namespace ::jobwheel::dispatcher::testing;  // NOLINT

constexpr absl::Duration kStartTimeout = absl::Seconds(30);
constexpr absl::Duration kWait = absl::Seconds(60);

absl::Time Now() { return RealClock::Get().Now(); }

class DispatcherIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::BitGen gen;
    Stack::Options o;
    // The shared --executor_token_file of the registry, the dispatcher and the executors.
    o.executor_token = absl::StrCat("it-executor-", absl::Hex(absl::Uniform<uint64_t>(gen)),
                                    absl::Hex(absl::Uniform<uint64_t>(gen)));
    // Long enough that a SIGSTOPped executor stays listed.
    o.registry.extra_flags = {"--beat_deadline=30s", "--lease=60s"};
    // Room for a fire handed over well ahead of its time.
    o.dispatcher.extra_flags = {"--max_trigger_hold=10s"};
    o.scheduler.replicas = 0;  // The test plays the scheduler.
    o.serving_timeout = kStartTimeout;
    stack_ = std::make_unique<Stack>(std::move(o));
    ASSERT_TRUE(stack_->StartServices().ok()) << stack_->Logs();
    dsn_ = stack_->dsn();
    db_ = std::make_unique<pqxx::connection>(dsn_);
    ConnectDispatcher();

    for (int i = 0; i < 3; ++i) {
      Stack::ExecutorSpec spec;
      spec.app = "demo";
      auto index = stack_->AddExecutor(spec);
      ASSERT_TRUE(index.ok()) << index.status() << "\n" << stack_->Logs();
    }
    addresses_.clear();
    for (int i = 0; i < stack_->executor_count(); ++i) addresses_.push_back(stack_->executor(i));
    std::sort(addresses_.begin(), addresses_.end());  // The dispatcher's routing order.

    // Ready when the dispatcher's watch cache holds all three: a broadcast reaches each.
    probe_job_ = InsertJob(dsn_, "demo", "shard", v1::ROUTING_STRATEGY_SHARDING_BROADCAST);
    ASSERT_TRUE(Eventually(
        [&] {
          auto r = Dispatch(probe_job_, "shard", v1::ROUTING_STRATEGY_SHARDING_BROADCAST, 1);
          return r.ok() && r->outcomes(0).run_ids_size() == 3;
        },
        kStartTimeout))
        << "the dispatcher never saw three executors\n"
        << stack_->Logs();
  }

  void TearDown() override {
    if (stack_ == nullptr) return;
    if (HasFailure()) std::cerr << stack_->Logs();
    // A stopped executor would not act on the stack's SIGTERM.
    for (int i = 0; i < stack_->executor_count(); ++i) {
      jobwheel::testing::Process& e = stack_->executor_process(i);
      if (e.pid() > 0 && e.running()) e.Signal(SIGCONT);
    }
    stack_->Stop();
  }

  void ConnectDispatcher() {
    dispatcher_stub_ = v1::DispatcherService::NewStub(stack_->Channel(stack_->dispatcher(0)));
  }

  // Records `n` fires of `job_id` and dispatches them in one call, as the scheduler would.
  // Retries while the dispatcher is not ready (no registry snapshot yet).
  absl::StatusOr<v1::DispatchResponse> Dispatch(
      int64_t job_id, const std::string& handler, v1::RoutingStrategy strategy, int n,
      v1::BlockStrategy block = v1::BLOCK_STRATEGY_SERIAL_EXECUTION,
      absl::Duration timeout = absl::ZeroDuration(), const std::string& param = "",
      absl::optional<std::string> override_param = absl::nullopt) {
    v1::DispatchRequest req;
    v1::Job job = MakeJob(job_id, "demo", handler, strategy, block, timeout);
    job.set_param(param);
    for (int i = 0; i < n; ++i) {
      v1::Fire f = MakeFire(InsertFire(dsn_, job_id), job, scheduled_.value_or(Now()));
      if (override_param.has_value()) f.set_param(*override_param);
      *req.add_fires() = f;
    }
    return DispatchAsScheduler(*stack_, *dispatcher_stub_, req, kStartTimeout);
  }

  int64_t Job(const std::string& handler, v1::RoutingStrategy strategy,
              v1::BlockStrategy block = v1::BLOCK_STRATEGY_SERIAL_EXECUTION,
              int64_t timeout_ms = 0) {
    return InsertJob(dsn_, "demo", handler, strategy, block, timeout_ms);
  }

  int64_t Scalar(const std::string& sql) {
    pqxx::work tx(*db_);
    return tx.exec1(sql)[0].as<int64_t>();
  }
  RunRow Run(int64_t run_id) { return RunById(dsn_, run_id); }
  bool RunReaches(int64_t run_id, v1::RunStatus status, absl::Duration wait = kWait) {
    return Eventually([&] { return Run(run_id).status == status; }, wait);
  }
  // start_time and end_time in microseconds.
  std::pair<int64_t, int64_t> Times(int64_t run_id) {
    pqxx::work tx(*db_);
    pqxx::row r = tx.exec1(
        absl::StrCat("SELECT (EXTRACT(EPOCH FROM start_time) * 1000000)::BIGINT, "
                     "(EXTRACT(EPOCH FROM end_time) * 1000000)::BIGINT FROM runs WHERE id = ",
                     run_id));
    return {r[0].as<int64_t>(), r[1].as<int64_t>()};
  }

  std::unique_ptr<v1::ExecutorService::Stub> ExecutorStub(const std::string& address) {
    return v1::ExecutorService::NewStub(stack_->Channel(address));
  }

  bool ExecutorIdle(const std::string& address, int64_t job_id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    AddBearer(ctx, stack_->ExecutorCallerToken("dispatcher", "demo", address));
    v1::IdleBeatRequest req;
    req.set_job_id(job_id);
    v1::IdleBeatResponse resp;
    return ExecutorStub(address)->IdleBeat(&ctx, req, &resp).ok() && resp.idle();
  }

  // The executor process listening on `address`.
  jobwheel::testing::Process& ExecutorAt(const std::string& address) {
    for (int i = 0; i < stack_->executor_count(); ++i) {
      if (stack_->executor(i) == address) return stack_->executor_process(i);
    }
    ADD_FAILURE() << "no executor at " << address;
    return stack_->executor_process(0);
  }

  std::unique_ptr<Stack> stack_;
  std::string dsn_;
  std::unique_ptr<pqxx::connection> db_;
  std::vector<std::string> addresses_;  // Sorted.
  int64_t probe_job_ = 0;
  // The scheduled time of the fires Dispatch sends (default: now, i.e. due).
  absl::optional<absl::Time> scheduled_;
  std::unique_ptr<v1::DispatcherService::Stub> dispatcher_stub_;
};

TEST_F(DispatcherIntegrationTest, RoundSpreadsEvenlyAndAllSucceed) {
  const int64_t job = Job("echo", v1::ROUTING_STRATEGY_ROUND);
  std::vector<int64_t> runs;
  for (int batch = 0; batch < 3; ++batch) {
    auto r = Dispatch(job, "echo", v1::ROUTING_STRATEGY_ROUND, 100);
    ASSERT_TRUE(r.ok()) << r.status();
    for (const auto& o : r->outcomes()) {
      ASSERT_EQ(o.status(), v1::FIRE_STATUS_DISPATCHED) << o.message();
      ASSERT_EQ(o.run_ids_size(), 1);
      runs.push_back(o.run_ids(0));
    }
  }
  ASSERT_TRUE(Eventually(
      [&] {
        return Scalar(absl::StrCat("SELECT count(*) FROM runs WHERE job_id = ", job,
                                   " AND status = 3")) == 300;
      },
      kWait))
      << "not all 300 runs succeeded";
  pqxx::work tx(*db_);
  std::map<std::string, int> per;
  for (const auto& row :
       tx.exec(absl::StrCat("SELECT executor_address, count(*) FROM runs WHERE job_id = ", job,
                            " GROUP BY executor_address"))) {
    per[row[0].as<std::string>()] = row[1].as<int>();
  }
  ASSERT_EQ(per.size(), 3u);
  for (const auto& [address, n] : per) {
    EXPECT_GE(n, 95) << address;
    EXPECT_LE(n, 105) << address;
  }
}

TEST_F(DispatcherIntegrationTest, ShardingBroadcastReachesAllThree) {
  const int64_t job = Job("shard", v1::ROUTING_STRATEGY_SHARDING_BROADCAST);
  auto r = Dispatch(job, "shard", v1::ROUTING_STRATEGY_SHARDING_BROADCAST, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outcomes(0).run_ids_size(), 3);
  for (int i = 0; i < 3; ++i) {
    const int64_t id = r->outcomes(0).run_ids(i);
    ASSERT_TRUE(RunReaches(id, v1::RUN_STATUS_SUCCEEDED)) << Run(id).trigger_message;
    RunRow row = Run(id);
    EXPECT_EQ(row.address, addresses_[i]);
    EXPECT_EQ(row.shard_index, i);
    EXPECT_EQ(row.shard_total, 3);
    EXPECT_NE(row.result_message.find(absl::StrCat("shard ", i, "/3")), std::string::npos)
        << row.result_message;
  }
}

TEST_F(DispatcherIntegrationTest, FailoverSkipsDeadExecutors) {
  // Stopped (still listed by the registry, but not answering Beat): skipped by the probe.
  ExecutorAt(addresses_[0]).Signal(SIGSTOP);
  const int64_t job = Job("echo", v1::ROUTING_STRATEGY_FAILOVER);
  auto r = Dispatch(job, "echo", v1::ROUTING_STRATEGY_FAILOVER, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outcomes(0).status(), v1::FIRE_STATUS_DISPATCHED) << r->outcomes(0).message();
  const int64_t run = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunReaches(run, v1::RUN_STATUS_SUCCEEDED)) << Run(run).trigger_message;
  EXPECT_EQ(Run(run).address, addresses_[1]);
  EXPECT_NE(Run(run).trigger_message.find("skipped " + addresses_[0]), std::string::npos)
      << Run(run).trigger_message;

  // Killed: gone from the registry or refusing connections; either way not chosen.
  ExecutorAt(addresses_[1]).Kill();
  r = Dispatch(job, "echo", v1::ROUTING_STRATEGY_FAILOVER, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t run2 = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunReaches(run2, v1::RUN_STATUS_SUCCEEDED)) << Run(run2).trigger_message;
  EXPECT_EQ(Run(run2).address, addresses_[2]);
}

// A fire handed over ahead of its time: its run is recorded for one executor, which is killed
// before the run is due; when due, the run goes to an executor still online.
TEST_F(DispatcherIntegrationTest, HeldRunMovesOffAnExecutorKilledBeforeItsTime) {
  const int64_t job = Job("echo", v1::ROUTING_STRATEGY_FIRST);
  // Seconds ahead, within --max_trigger_hold: the kill below is seen long before.
  const absl::Time due = Now() + absl::Seconds(4);
  scheduled_ = due;
  auto r = Dispatch(job, "echo", v1::ROUTING_STRATEGY_FIRST, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outcomes(0).status(), v1::FIRE_STATUS_DISPATCHED) << r->outcomes(0).message();
  const int64_t run = r->outcomes(0).run_ids(0);
  ASSERT_EQ(Run(run).address, addresses_[0]);
  ASSERT_EQ(Run(run).status, v1::RUN_STATUS_PENDING);
  ExecutorAt(addresses_[0]).Kill();
  ASSERT_TRUE(RunReaches(run, v1::RUN_STATUS_SUCCEEDED)) << Run(run).trigger_message;
  EXPECT_EQ(Run(run).address, addresses_[1]);
  EXPECT_NE(Run(run).trigger_message.find(addresses_[0] + " left before the trigger"),
            std::string::npos)
      << Run(run).trigger_message;
  // Started at its time, not when handed over.
  EXPECT_GE(Times(run).first, absl::ToUnixMicros(due));
}

TEST_F(DispatcherIntegrationTest, BusyoverSkipsBusyExecutor) {
  const int64_t job = Job("sleep", v1::ROUTING_STRATEGY_BUSYOVER);
  auto r = Dispatch(job, "sleep", v1::ROUTING_STRATEGY_BUSYOVER, 1,
                    v1::BLOCK_STRATEGY_SERIAL_EXECUTION, absl::ZeroDuration(), "3000");
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t first = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunReaches(first, v1::RUN_STATUS_RUNNING));
  EXPECT_EQ(Run(first).address, addresses_[0]);
  r = Dispatch(job, "sleep", v1::ROUTING_STRATEGY_BUSYOVER, 1, v1::BLOCK_STRATEGY_SERIAL_EXECUTION,
               absl::ZeroDuration(), "3000");
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t second = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunReaches(second, v1::RUN_STATUS_SUCCEEDED)) << Run(second).trigger_message;
  EXPECT_EQ(Run(second).address, addresses_[1]);
  EXPECT_NE(Run(second).trigger_message.find("skipped " + addresses_[0] + " (busy"),
            std::string::npos)
      << Run(second).trigger_message;
  EXPECT_TRUE(RunReaches(first, v1::RUN_STATUS_SUCCEEDED));
}

TEST_F(DispatcherIntegrationTest, SerialExecutionRunsInOrder) {
  const int64_t job = Job("sleep", v1::ROUTING_STRATEGY_FIRST);
  auto r = Dispatch(job, "sleep", v1::ROUTING_STRATEGY_FIRST, 3,
                    v1::BLOCK_STRATEGY_SERIAL_EXECUTION, absl::ZeroDuration(), "300");
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<int64_t> runs;
  for (const auto& o : r->outcomes()) runs.push_back(o.run_ids(0));
  for (int64_t id : runs) ASSERT_TRUE(RunReaches(id, v1::RUN_STATUS_SUCCEEDED)) << id;
  // One executor, one after the other, in trigger order.
  std::vector<std::pair<int64_t, int64_t>> t;
  for (int64_t id : runs) {
    EXPECT_EQ(Run(id).address, addresses_[0]);
    t.push_back(Times(id));
  }
  std::sort(t.begin(), t.end());
  for (size_t i = 1; i < t.size(); ++i) {
    EXPECT_GE(t[i].first, t[i - 1].second) << "run " << i << " overlapped its predecessor";
  }
}

TEST_F(DispatcherIntegrationTest, DiscardLaterDiscardsTheNewRun) {
  const int64_t job = Job("sleep", v1::ROUTING_STRATEGY_FIRST, v1::BLOCK_STRATEGY_DISCARD_LATER);
  auto r = Dispatch(job, "sleep", v1::ROUTING_STRATEGY_FIRST, 1, v1::BLOCK_STRATEGY_DISCARD_LATER,
                    absl::ZeroDuration(), "2000");
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t first = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunReaches(first, v1::RUN_STATUS_RUNNING));
  r = Dispatch(job, "sleep", v1::ROUTING_STRATEGY_FIRST, 1, v1::BLOCK_STRATEGY_DISCARD_LATER,
               absl::ZeroDuration(), "2000");
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t second = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunReaches(second, v1::RUN_STATUS_DISCARDED)) << Run(second).trigger_message;
  EXPECT_NE(Run(second).trigger_message.find("executor: DISCARDED"), std::string::npos)
      << Run(second).trigger_message;
  EXPECT_TRUE(Run(second).has_end);
  EXPECT_TRUE(RunReaches(first, v1::RUN_STATUS_SUCCEEDED));
}

TEST_F(DispatcherIntegrationTest, CoverEarlyDiscardsTheEarlierRun) {
  const int64_t job = Job("sleep", v1::ROUTING_STRATEGY_FIRST, v1::BLOCK_STRATEGY_COVER_EARLY);
  auto r = Dispatch(job, "sleep", v1::ROUTING_STRATEGY_FIRST, 1, v1::BLOCK_STRATEGY_COVER_EARLY,
                    absl::ZeroDuration(), "10000");
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t first = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunReaches(first, v1::RUN_STATUS_RUNNING));
  // The newer fire overrides the param: it sleeps briefly.
  r = Dispatch(job, "sleep", v1::ROUTING_STRATEGY_FIRST, 1, v1::BLOCK_STRATEGY_COVER_EARLY,
               absl::ZeroDuration(), "10000", std::string("100"));
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t second = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunReaches(second, v1::RUN_STATUS_SUCCEEDED)) << Run(second).trigger_message;
  ASSERT_TRUE(RunReaches(first, v1::RUN_STATUS_DISCARDED)) << Run(first).result_message;
}

TEST_F(DispatcherIntegrationTest, KillAndTimeout) {
  const int64_t job = Job("sleep", v1::ROUTING_STRATEGY_FIRST);
  auto r = Dispatch(job, "sleep", v1::ROUTING_STRATEGY_FIRST, 1,
                    v1::BLOCK_STRATEGY_SERIAL_EXECUTION, absl::ZeroDuration(), "20000");
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t killed = r->outcomes(0).run_ids(0);
  ASSERT_TRUE(RunReaches(killed, v1::RUN_STATUS_RUNNING));
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    const std::string address = Run(killed).address;
    AddBearer(ctx, stack_->ExecutorCallerToken("scheduler", "demo", address));
    v1::KillRequest req;
    req.set_run_id(killed);
    req.set_reason("integration test");
    v1::KillResponse resp;
    grpc::Status s = ExecutorStub(address)->Kill(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_TRUE(resp.killed()) << resp.message();
  }
  EXPECT_TRUE(RunReaches(killed, v1::RUN_STATUS_KILLED)) << Run(killed).result_message;

  const int64_t slow =
      Job("sleep", v1::ROUTING_STRATEGY_FIRST, v1::BLOCK_STRATEGY_SERIAL_EXECUTION, 1000);
  r = Dispatch(slow, "sleep", v1::ROUTING_STRATEGY_FIRST, 1, v1::BLOCK_STRATEGY_SERIAL_EXECUTION,
               absl::Seconds(1), "20000");
  ASSERT_TRUE(r.ok()) << r.status();
  const int64_t timed_out = r->outcomes(0).run_ids(0);
  EXPECT_TRUE(RunReaches(timed_out, v1::RUN_STATUS_TIMED_OUT)) << Run(timed_out).result_message;
}

TEST_F(DispatcherIntegrationTest, ResultsReportedWhileDispatcherDownArriveAfterRestart) {
  const int64_t job = Job("sleep", v1::ROUTING_STRATEGY_ROUND);
  auto r = Dispatch(job, "sleep", v1::ROUTING_STRATEGY_ROUND, 6,
                    v1::BLOCK_STRATEGY_SERIAL_EXECUTION, absl::ZeroDuration(), "1500");
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<int64_t> runs;
  for (const auto& o : r->outcomes()) runs.push_back(o.run_ids(0));
  for (int64_t id : runs) ASSERT_TRUE(RunReaches(id, v1::RUN_STATUS_RUNNING, kWait)) << id;

  Stack::KillProcess(stack_->dispatcher_process(0));  // kill -9, reaped.
  ASSERT_FALSE(stack_->dispatcher_process(0).proc->running());
  // The executors finish their runs with nobody to report to.
  ASSERT_TRUE(Eventually(
      [&] {
        for (const auto& a : addresses_) {
          if (!ExecutorIdle(a, job)) return false;
        }
        return true;
      },
      kWait));
  EXPECT_EQ(
      Scalar(absl::StrCat("SELECT count(*) FROM runs WHERE job_id = ", job, " AND status >= 3")), 0)
      << "a result was recorded although the dispatcher was down";

  // Same flags and port: the executors' spools deliver.
  ASSERT_TRUE(stack_->StartDispatcher(0).ok()) << stack_->Logs();
  ConnectDispatcher();
  ASSERT_TRUE(Eventually(
      [&] {
        return Scalar(absl::StrCat("SELECT count(*) FROM runs WHERE job_id = ", job,
                                   " AND status = 3 AND end_time IS NOT NULL")) == 6;
      },
      kWait))
      << "results lost across the dispatcher restart";
  EXPECT_EQ(Scalar(absl::StrCat("SELECT count(*) FROM runs WHERE job_id = ", job)), 6);
}

}  // namespace
}  // namespace jobwheel::dispatcher
