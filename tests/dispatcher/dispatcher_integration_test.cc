// The dispatcher with real processes: PostgreSQL, the registry, the dispatcher and three demo
// executors. The test plays the scheduler: it writes job and fire rows and calls Dispatch.
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/auth/bearer.h"
#include "common/testing/caller_keys.h"
#include "common/testing/pg_test_db.h"
#include "common/testing/process.h"
#include "common/time/proto_time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "pqxx/pqxx"
#include "services/dispatcher/dispatch_test_util.h"

namespace jobwheel::dispatcher {
namespace {

using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::PickFreePort;
using ::jobwheel::testing::Process;
using ::jobwheel::testing::RunfilePath;
using ::jobwheel::testing::WaitForServing;
using namespace ::jobwheel::dispatcher::testing;  // NOLINT

constexpr char kAdminToken[] = "it-admin-token";
constexpr char kExecutorToken[] = "it-executor-token";
constexpr absl::Duration kStartTimeout = absl::Seconds(30);
constexpr absl::Duration kWait = absl::Seconds(60);

std::string Addr(int port) { return absl::StrCat("127.0.0.1:", port); }

class DispatcherIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = jobwheel::testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
    db_ = std::make_unique<pqxx::connection>(dsn_);
    dir_ = jobwheel::testing::TestTempDir(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    admin_token_file_ = WriteFile("admin.token", kAdminToken);
    auto keys = jobwheel::testing::WriteCallerKeys(dir_);
    ASSERT_TRUE(keys.ok()) << keys.status();
    keys_ = *keys;
    executor_token_file_ = WriteFile("executor.token", kExecutorToken);

    registry_port_ = PickFreePort();
    ASSERT_TRUE(
        registry_
            .Start(RunfilePath("services/registry/registry"),
                   {"--listen=" + Addr(registry_port_), "--db_dsn=" + dsn_,
                    "--metrics_address=", "--dispatcher_public_key_file=" + keys_.dispatcher_pub,
                    "--executor_token_file=" + executor_token_file_,
                    "--admin_token_file=" + admin_token_file_,
                    // Long enough that a SIGSTOPped executor stays listed.
                    "--beat_deadline=30s", "--lease=60s"},
                   dir_ + "/registry.log")
            .ok());
    ASSERT_TRUE(WaitForServing(Addr(registry_port_), kStartTimeout).ok());

    dispatcher_port_ = PickFreePort();
    StartDispatcher();

    for (int i = 0; i < 3; ++i) {
      const int port = PickFreePort();
      executor_ports_.push_back(port);
      auto p = std::make_unique<Process>();
      const std::string name = absl::StrCat("executor", i);
      ASSERT_TRUE(p->Start(RunfilePath("sdk/examples/demo_executor"),
                           {"--listen=" + Addr(port), "--app=demo",
                            "--registry_target=" + Addr(registry_port_),
                            "--dispatcher_target=" + Addr(dispatcher_port_),
                            "--dispatcher_public_key_file=" + keys_.dispatcher_pub,
                            "--scheduler_public_key_file=" + keys_.scheduler_pub,
                            "--executor_token_file=" + executor_token_file_,
                            "--log_dir=" + dir_ + "/" + name + "/logs",
                            "--spool_dir=" + dir_ + "/" + name + "/spool", "--metrics_address="},
                           dir_ + "/" + name + ".log")
                      .ok());
      executors_.push_back(std::move(p));
    }
    for (int port : executor_ports_) ASSERT_TRUE(WaitForServing(Addr(port), kStartTimeout).ok());
    addresses_.clear();
    for (int port : executor_ports_) addresses_.push_back(Addr(port));
    std::sort(addresses_.begin(), addresses_.end());  // The dispatcher's routing order.

    // Ready when the dispatcher's watch cache holds all three: a broadcast reaches each.
    probe_job_ = InsertJob(dsn_, "demo", "shard", v1::ROUTING_STRATEGY_SHARDING_BROADCAST);
    ASSERT_TRUE(Eventually(
        [&] {
          auto r = Dispatch(probe_job_, "shard", v1::ROUTING_STRATEGY_SHARDING_BROADCAST, 1);
          return r.ok() && r->outcomes(0).run_ids_size() == 3;
        },
        kStartTimeout))
        << "the dispatcher never saw three executors";
  }

  void TearDown() override {
    for (auto& e : executors_) {
      e->Signal(SIGCONT);
      e->Kill();
    }
    dispatcher_.Kill();
    registry_.Kill();
  }

  std::string WriteFile(const std::string& name, const std::string& content) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << content << "\n";
    return path;
  }

  void StartDispatcher() {
    ASSERT_TRUE(dispatcher_
                    .Start(RunfilePath("services/dispatcher/dispatcher"),
                           {"--listen=" + Addr(dispatcher_port_), "--db_dsn=" + dsn_,
                            "--metrics_address=", "--registry_target=" + Addr(registry_port_),
                            "--signing_key_file=" + keys_.dispatcher_key,
                            "--scheduler_public_key_file=" + keys_.scheduler_pub,
                            "--executor_token_file=" + executor_token_file_,
                            // Room for a fire handed over well ahead of its time.
                            "--max_trigger_hold=10s"},
                           dir_ + "/dispatcher.log")
                    .ok());
    ASSERT_TRUE(WaitForServing(Addr(dispatcher_port_), kStartTimeout).ok());
    dispatcher_stub_ = v1::DispatcherService::NewStub(
        grpc::CreateChannel(Addr(dispatcher_port_), grpc::InsecureChannelCredentials()));
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
      v1::Fire f = MakeFire(InsertFire(dsn_, job_id), job, scheduled_.value_or(absl::Now()));
      if (override_param.has_value()) f.set_param(*override_param);
      *req.add_fires() = f;
    }
    grpc::Status last;
    v1::DispatchResponse resp;
    const bool ok = Eventually(
        [&] {
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
          AddBearer(ctx, CallerToken("scheduler", "dispatcher"));
          last = dispatcher_stub_->Dispatch(&ctx, req, &resp);
          return last.error_code() != grpc::StatusCode::UNAVAILABLE;
        },
        kStartTimeout);
    if (!ok || !last.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(last.error_code()), last.error_message());
    }
    return resp;
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
    return v1::ExecutorService::NewStub(
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  }

  bool ExecutorIdle(const std::string& address, int64_t job_id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    AddBearer(ctx, CallerToken("dispatcher", address));
    v1::IdleBeatRequest req;
    req.set_job_id(job_id);
    v1::IdleBeatResponse resp;
    return ExecutorStub(address)->IdleBeat(&ctx, req, &resp).ok() && resp.idle();
  }

  int IndexOf(const std::string& address) {
    for (size_t i = 0; i < executor_ports_.size(); ++i) {
      if (Addr(executor_ports_[i]) == address) return static_cast<int>(i);
    }
    return -1;
  }

  std::string dsn_;
  std::unique_ptr<pqxx::connection> db_;
  std::string dir_;
  // A token as the scheduler or a dispatcher ("scheduler"/"dispatcher") signs it.
  std::string CallerToken(absl::string_view issuer, absl::string_view audience) const {
    auto token = jobwheel::testing::SignCallerToken(
        issuer == "scheduler" ? keys_.scheduler_key : keys_.dispatcher_key, issuer, audience);
    return token.ok() ? *token : std::string();
  }

  jobwheel::testing::CallerKeyFiles keys_;
  std::string admin_token_file_;
  std::string executor_token_file_;
  int registry_port_ = 0;
  int dispatcher_port_ = 0;
  Process registry_;
  Process dispatcher_;
  std::vector<int> executor_ports_;
  std::vector<std::unique_ptr<Process>> executors_;
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
  executors_[IndexOf(addresses_[0])]->Signal(SIGSTOP);
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
  executors_[IndexOf(addresses_[1])]->Kill();
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
  const absl::Time due = absl::Now() + absl::Seconds(4);
  scheduled_ = due;
  auto r = Dispatch(job, "echo", v1::ROUTING_STRATEGY_FIRST, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outcomes(0).status(), v1::FIRE_STATUS_DISPATCHED) << r->outcomes(0).message();
  const int64_t run = r->outcomes(0).run_ids(0);
  ASSERT_EQ(Run(run).address, addresses_[0]);
  ASSERT_EQ(Run(run).status, v1::RUN_STATUS_PENDING);
  executors_[IndexOf(addresses_[0])]->Kill();
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
    AddBearer(ctx, CallerToken("scheduler", address));
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

  dispatcher_.Signal(SIGKILL);
  ASSERT_TRUE(dispatcher_.Wait(absl::Seconds(10)).ok() || !dispatcher_.running());
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

  StartDispatcher();  // Same port: the executors' spools deliver.
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
