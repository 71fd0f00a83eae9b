// PostgreSQL failover under load (issue 25): a real highly available PostgreSQL — three
// PostgreSQL 15 members run by Patroni on etcd, synchronous_mode on (scripts/lib/patroni.sh)
// — under a real registry, dispatcher, two scheduler replicas and two demo executors, all
// given the cluster's multi-host DSN (target_session_attrs=read-write). Jobs fire every
// second; then the primary's node dies (kill -9 of its Patroni and postmaster: a standby is
// promoted once the leader key expires) and, later, a planned `patronictl switchover` moves
// the primary. The test asserts, counted over the whole window:
//  - lost = 0: every job has a fire for every second its cron expression yields;
//  - executed_twice = 0 and not executed = 0: counted on the executors' --executions_file,
//    each fire's handler ran exactly once;
//  - results_lost = 0: every fire's run ended SUCCEEDED (the executor's result recorded);
//  - nonterminal = 0: no run left PENDING/RUNNING;
//  - the schedule lock, lost with the old primary, is re-acquired on the new one with a
//    higher epoch, and no fire carries an epoch that was not the leader's at the time.
// It prints `pg_failover: mode=sync kills=K switchovers=S fires_per_s=... resume_s=...
// lost=... executed_twice=... results_lost=... nonterminal=...` (resume_s: the longest pause
// in hand-offs to the dispatcher around either fault).
//
// Skipped (GTEST_SKIP) when Patroni or etcd is not installed (scripts/setup --test installs
// them). JOBWHEEL_HA_JOBS sets the load (jobs firing every second; default 500).
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/testing/executions.h"
#include "common/testing/probe_job.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/leadership.grpc.pb.h"
#include "pqxx/pqxx"
#include "tests/ha/patroni_cluster.h"

namespace jobwheel {
namespace {

using testing::Eventually;
using testing::Stack;

constexpr char kCron[] = "* * * * * ?";

class PgFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const absl::Status started = cluster_.Start(3, "sync");
    if (absl::IsFailedPrecondition(started)) GTEST_SKIP() << started.message();
    ASSERT_TRUE(started.ok()) << started.message();
    dsn_ = cluster_.dsn();
    ASSERT_NE(dsn_.find("target_session_attrs=read-write"), std::string::npos) << dsn_;

    Stack::Options options;
    options.dsn = dsn_;
    options.executor_token = absl::StrCat("ha-executor-", testing::PickFreePort());
    options.scheduler.replicas = 2;
    options.scheduler.replica_ids = {"sched-a", "sched-b"};
    // A failover takes the database away for ~10 s (Patroni's ttl): the fires due meanwhile
    // go out late, and must still go out (this counts every second).
    options.scheduler.extra_flags = {"--misfire_threshold=120s"};
    options.serving_timeout = absl::Seconds(60);
    options.metrics = true;
    stack_ = std::make_unique<Stack>(options);
    const absl::Status up = stack_->StartServices();
    ASSERT_TRUE(up.ok()) << up << "\n" << stack_->Logs();
  }

  void TearDown() override {
    if (stack_ != nullptr) {
      stack_->Stop();
      if (HasFailure()) std::cerr << stack_->Logs();
    }
    if (HasFailure()) std::cerr << cluster_.Logs() << "\n";
  }

  std::string Patroni(const std::string& verb, const std::string& after = "") {
    bool ok = false;
    const std::string out = cluster_.Run(verb, &ok, after);
    EXPECT_TRUE(ok) << verb << ": " << out;
    return out;
  }

  // Scheduler replica i's /metrics.
  std::string Metrics(int i) {
    int rc = 0;
    return testing::Shell(absl::StrCat("curl -fsS http://127.0.0.1:",
                                       stack_->scheduler_process(i).metrics_port, "/metrics"),
                          &rc);
  }

  // A query on the primary of the moment (a fresh connection each time: libpq finds it).
  // -1 while no primary answers.
  int64_t Count(const std::string& sql) {
    try {
      pqxx::connection conn(dsn_);
      pqxx::nontransaction tx(conn);
      pqxx::result r = tx.exec(sql);
      return r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
    } catch (const std::exception& e) {
      return -1;
    }
  }
  void Exec(const std::string& sql) {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    tx.exec(sql);
    tx.commit();
  }

  // The longest pause in hand-offs (between consecutive dispatch times of the jobs' fires)
  // from one second before `fault` to 60 s after it: how long firing stopped.
  absl::Duration HandOffPause(absl::Time fault) {
    const int64_t us = Count(absl::StrCat(
        "SELECT (EXTRACT(EPOCH FROM max(gap)) * 1000000)::BIGINT FROM (SELECT dispatch_time - "
        "lag(dispatch_time) OVER (ORDER BY dispatch_time) AS gap FROM fires WHERE status = 2 "
        "AND job_id <> ",
        probe_job_, " AND dispatch_time BETWEEN '", ToPgTimestamp(fault - absl::Seconds(1)),
        "' AND '", ToPgTimestamp(fault + absl::Seconds(60)), "') g"));
    return absl::Microseconds(us);
  }

  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    c->AddMetadata("authorization", "Bearer " + stack_->admin_token());
    return c;
  }

  // Replica i's LeadershipService/GetLeader; false when the call fails.
  bool Leader(int i, jobwheel::v1::GetLeaderResponse* out) {
    auto stub = jobwheel::v1::LeadershipService::NewStub(stack_->Channel(stack_->scheduler(i)));
    return stub->GetLeader(Ctx().get(), {}, out).ok();
  }
  // The epoch of whichever replica leads now; 0 when none says it leads.
  int64_t LeaderEpoch() {
    for (int i = 0; i < 2; ++i) {
      jobwheel::v1::GetLeaderResponse r;
      if (Leader(i, &r) && r.is_leader()) return r.epoch();
    }
    return 0;
  }

  // Two executors of app "demo", and a probe job triggered until the dispatcher has routed
  // it to both.
  void StartExecutors() {
    for (int i = 0; i < 2; ++i) {
      auto index = stack_->AddExecutor({});
      ASSERT_TRUE(index.ok()) << index.status();
    }
    ASSERT_TRUE(Eventually([&] { return LeaderEpoch() > 0; }, absl::Seconds(20)));
    auto admin = jobwheel::v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler(0)));
    absl::StatusOr<int64_t> probe =
        testing::RouteProbeJob(*stack_, *admin, {0, 1}, jobwheel::v1::ROUTING_STRATEGY_ROUND);
    ASSERT_TRUE(probe.ok()) << "the dispatcher never routed the probe job to both executors: "
                            << probe.status();
    probe_job_ = *probe;
  }

  // Fires handed off (dispatched) after `t`: the schedule runs again.
  int64_t HandedOffAfter(absl::Time t) {
    return Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = 2 AND dispatch_time > '",
                              ToPgTimestamp(t), "' AND job_id <> ", probe_job_));
  }

  // Waits for the schedule to resume after a fault at `fault`: fires scheduled after the
  // fault handed off. Returns the time from the fault to the first such hand-off.
  absl::Duration AwaitResume(absl::Time fault, absl::Duration timeout) {
    const std::string sql = absl::StrCat(
        "SELECT (EXTRACT(EPOCH FROM min(dispatch_time)) * 1000000)::BIGINT FROM fires WHERE "
        "status = 2 AND scheduled_at > '",
        ToPgTimestamp(fault), "' AND job_id <> ", probe_job_);
    int64_t first = 0;
    const bool resumed = Eventually(
        [&] {
          first = Count(sql);
          return first > 0;
        },
        timeout);
    EXPECT_TRUE(resumed) << "no fire handed off within " << timeout << " of the fault";
    return resumed ? FromMicros(first) - fault : timeout;
  }

  testing::PatroniCluster cluster_;
  std::string dsn_;
  std::unique_ptr<Stack> stack_;
  int64_t probe_job_ = 0;
};

TEST_F(PgFailoverTest, NothingLostNothingTwiceAcrossAKillAndASwitchover) {
  int jobs = 500;
  if (const char* j = std::getenv("JOBWHEEL_HA_JOBS")) jobs = std::atoi(j);
  ASSERT_NO_FATAL_FAILURE(StartExecutors());
  const int64_t epoch_start = LeaderEpoch();
  // Synchronous replication: the scheduler reports one synchronous standby, no warning.
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string m = Metrics(0);
        return testing::MetricValue(m, "jobwheel_scheduler_db_standbys{sync=\"true\"}") == 1 &&
               testing::MetricValue(m, "jobwheel_scheduler_db_async_replication") == 0;
      },
      absl::Seconds(30)))
      << Metrics(0);

  const absl::Time first = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()) + 2);
  Exec(absl::StrCat(
      "INSERT INTO jobs (app, name, schedule_kind, cron_expression, time_zone, handler, "
      "misfire_strategy, routing_strategy, enabled, next_fire_at) "
      "SELECT 'demo', 'ha-' || g, 'CRON', '",
      kCron, "', 'UTC', 'echo', 1, 3, true, '", ToPgTimestamp(first),
      "'::timestamptz FROM generate_series(1, ", jobs, ") AS g"));
  ASSERT_TRUE(Eventually([&] { return HandedOffAfter(first) >= 4 * jobs; }, absl::Seconds(40)))
      << "the schedule never reached steady firing: " << HandedOffAfter(first);

  // 1. The primary's node dies.
  const std::string killed_member = Patroni("kill-primary");
  const absl::Time killed = absl::Now();
  const absl::Duration resume_kill = AwaitResume(killed, absl::Seconds(60));
  std::cerr << "kill -9 of " << killed_member << ": fires resumed after " << resume_kill << "\n";
  int64_t epoch_after_kill = 0;
  ASSERT_TRUE(Eventually(
      [&] {
        epoch_after_kill = LeaderEpoch();
        return epoch_after_kill > epoch_start;
      },
      absl::Seconds(30)))
      << "no scheduler re-acquired the schedule lock with a higher epoch (was " << epoch_start
      << ", now " << LeaderEpoch() << ")";
  // The dead node rejoins (as a standby, rewound) while the cluster runs on.
  Patroni("start-member", killed_member);
  const absl::Time steady = absl::Now();
  ASSERT_TRUE(Eventually([&] { return HandedOffAfter(steady) >= 3 * jobs; }, absl::Seconds(40)));

  // 2. A planned switchover (to the synchronous standby: waited for first).
  // The switchover command returns once another member leads: the fault began before it.
  const absl::Time switched = absl::Now();
  Patroni("switchover");
  const absl::Duration resume_switch = AwaitResume(switched, absl::Seconds(60));
  std::cerr << "switchover: fires resumed after " << resume_switch << "\n";
  int64_t epoch_after_switch = 0;
  ASSERT_TRUE(Eventually(
      [&] {
        epoch_after_switch = LeaderEpoch();
        return epoch_after_switch > epoch_after_kill;
      },
      absl::Seconds(30)));
  const absl::Time after_switch = absl::Now();
  ASSERT_TRUE(
      Eventually([&] { return HandedOffAfter(after_switch) >= 3 * jobs; }, absl::Seconds(40)));

  // Stop firing; next_fire_at, frozen now, ends each job's window.
  std::map<int64_t, absl::Time> end;
  {
    pqxx::connection conn(dsn_);
    pqxx::work tx(conn);
    for (const pqxx::row& r :
         tx.exec("UPDATE jobs SET enabled = false WHERE name LIKE 'ha-%' RETURNING id, "
                 "(EXTRACT(EPOCH FROM next_fire_at) * 1000000)::BIGINT")) {
      end[r[0].as<int64_t>()] = FromMicros(r[1].as<int64_t>());
    }
    tx.commit();
  }
  ASSERT_EQ(end.size(), static_cast<size_t>(jobs));
  const std::string ours = absl::StrCat("job_id <> ", probe_job_);
  EXPECT_TRUE(Eventually([&] { return Count("SELECT count(*) FROM fires WHERE status = 1") == 0; },
                         absl::Seconds(60)))
      << Count("SELECT count(*) FROM fires WHERE status = 1") << " fires still PENDING";
  EXPECT_TRUE(
      Eventually([&] { return Count("SELECT count(*) FROM runs WHERE status IN (1, 2)") == 0; },
                 absl::Seconds(60)));
  const int64_t nonterminal = Count("SELECT count(*) FROM runs WHERE status IN (1, 2)");

  // Count: each job's seconds in [first, end), the fires' runs, the executors' executions.
  std::map<int64_t, int> executed;  // fire id → handler starts
  for (int i = 0; i < 2; ++i) {
    for (const testing::Execution& e : stack_->Executions(i)) {
      if (e.start && e.job_id != probe_job_) ++executed[e.fire_id];
    }
  }
  std::map<int64_t, std::map<int64_t, std::vector<int64_t>>> seen;  // job → second → fire ids
  std::map<int64_t, int> run_status;                                // fire id → run status
  int64_t fires = 0, bad_epoch = 0;
  std::map<std::string, int64_t> fire_states;  // "status N reason" → fires
  {
    pqxx::connection conn(dsn_);
    pqxx::nontransaction tx(conn);
    for (const pqxx::row& r :
         tx.exec("SELECT job_id, (EXTRACT(EPOCH FROM scheduled_at))::BIGINT, id, leader_epoch, "
                 "status, COALESCE(reason, ''), (EXTRACT(EPOCH FROM scheduled_at))::BIGINT "
                 "FROM fires WHERE " +
                 ours)) {
      ++fires;
      ++fire_states[absl::StrCat("status ", r[4].as<int>(), " ", r[5].as<std::string>())];
      seen[r[0].as<int64_t>()][r[1].as<int64_t>()].push_back(r[2].as<int64_t>());
      const int64_t e = r[3].as<int64_t>();
      if (e < epoch_start || e > epoch_after_switch) ++bad_epoch;
    }
    for (const pqxx::row& r : tx.exec("SELECT fire_id, status FROM runs WHERE " + ours)) {
      run_status[r[0].as<int64_t>()] = r[1].as<int>();
    }
  }
  int64_t expected = 0, lost = 0, duplicate = 0, not_executed = 0, executed_twice = 0;
  int64_t results_lost = 0;
  std::vector<std::string> examples;
  for (const auto& [job, job_end] : end) {
    auto& cells = seen[job];
    for (absl::Time t = first; t < job_end; t += absl::Seconds(1)) {
      ++expected;
      auto it = cells.find(absl::ToUnixSeconds(t));
      if (it == cells.end()) {
        ++lost;
        if (examples.size() < 10)
          examples.push_back(absl::StrCat("job ", job, " lost ", absl::FormatTime(t)));
        continue;
      }
      if (it->second.size() > 1) duplicate += it->second.size() - 1;
      for (int64_t fire : it->second) {
        const int n = executed[fire];
        if (n == 0) ++not_executed;
        if (n > 1) executed_twice += n - 1;
        if (run_status[fire] != 3) ++results_lost;  // 3: SUCCEEDED.
        if ((n != 1 || run_status[fire] != 3) && examples.size() < 10) {
          examples.push_back(
              absl::StrCat("fire ", fire, " executed ", n, "x, run status ", run_status[fire]));
        }
      }
    }
  }
  const absl::Duration window = end.begin()->second - first;
  const int64_t fires_per_s = jobs;
  // resume_s: the longest pause in hand-offs around either fault.
  const absl::Duration pause_kill = HandOffPause(killed);
  const absl::Duration pause_switch = HandOffPause(switched);
  const double resume_s = absl::ToDoubleSeconds(std::max(pause_kill, pause_switch));
  std::cout << "pg_failover: mode=sync kills=1 switchovers=1 fires_per_s=" << fires_per_s
            << " resume_s=" << absl::StrFormat("%.1f", resume_s) << " lost=" << lost
            << " executed_twice=" << executed_twice << " results_lost=" << results_lost
            << " nonterminal=" << nonterminal << "\n"
            << "  (hand-offs paused " << pause_kill << " around the kill, " << pause_switch
            << " around the switchover; first fire due after the fault handed off " << resume_kill
            << " after the kill, " << resume_switch << " after the switchover started; window "
            << window << ", " << expected << " fires expected, " << fires << " recorded, "
            << duplicate << " duplicate, " << not_executed << " not executed; epochs "
            << epoch_start << " -> " << epoch_after_kill << " -> " << epoch_after_switch << ")"
            << std::endl;
  for (const auto& [state, n] : fire_states) std::cout << "  fires " << state << ": " << n << "\n";

  EXPECT_EQ(lost, 0) << absl::StrJoin(examples, "; ");
  EXPECT_EQ(duplicate, 0) << absl::StrJoin(examples, "; ");
  EXPECT_EQ(fires, expected);
  EXPECT_EQ(not_executed, 0) << absl::StrJoin(examples, "; ");
  EXPECT_EQ(executed_twice, 0) << absl::StrJoin(examples, "; ");
  EXPECT_EQ(results_lost, 0) << absl::StrJoin(examples, "; ");
  EXPECT_EQ(nonterminal, 0);
  EXPECT_EQ(bad_epoch, 0);
  // Bounded by Patroni's detection (ttl 10 s) plus the reconnects.
  EXPECT_LE(resume_kill, absl::Seconds(30));
  EXPECT_LE(resume_switch, absl::Seconds(20));
  EXPECT_LE(pause_kill, absl::Seconds(30));
  EXPECT_LE(pause_switch, absl::Seconds(20));
}

}  // namespace
}  // namespace jobwheel
