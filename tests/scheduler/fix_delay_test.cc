// FIX_DELAY through a scheduler failover, with real processes: PostgreSQL, a registry, a
// dispatcher, two scheduler replicas and a demo executor. A job whose handler sleeps 700 ms
// with a 300 ms delay runs back to back, about 1.0 s from start to start; the leader is killed
// with SIGKILL mid-chain and the standby carries the chain on. Asserted:
//  - counted on the executor (its --executions_file, appended in order), the job's handler
//    starts and ends strictly alternate (never two at once) and each fire ran exactly once;
//  - in the database every fire has one run, every run SUCCEEDED, each run started at least
//    the delay after the previous one ended, and away from the kill starts are 1.0 s apart
//    (within a tolerance for a loaded machine);
//  - the chain went on under the new leader.
#include <signal.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/testing/executions.h"
#include "common/testing/probe_job.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/testing/stack_test.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/leadership.grpc.pb.h"
#include "pqxx/pqxx"

namespace jobwheel {
namespace {

using testing::Eventually;
using testing::Process;
using testing::Stack;

constexpr absl::Duration kSleep = absl::Milliseconds(700);
constexpr absl::Duration kDelay = absl::Milliseconds(300);

class FixDelayFailoverTest : public testing::StackTest {
 protected:
  void SetUp() override {
    Stack::Options options;
    options.migrate_database = true;
    options.scheduler.replicas = 2;
    options.scheduler.replica_ids = {"sched-a", "sched-b"};
    options.scheduler.start_later = true;
    ASSERT_NO_FATAL_FAILURE(StartStack(options));
  }

  std::unique_ptr<jobwheel::v1::JobAdminService::Stub> Admin(int replica) {
    return jobwheel::v1::JobAdminService::NewStub(
        grpc::CreateChannel(stack_->scheduler(replica), grpc::InsecureChannelCredentials()));
  }

  bool IsLeader(int replica) {
    auto stub = jobwheel::v1::LeadershipService::NewStub(
        grpc::CreateChannel(stack_->scheduler(replica), grpc::InsecureChannelCredentials()));
    jobwheel::v1::GetLeaderResponse r;
    return stub->GetLeader(Ctx().get(), {}, &r).ok() && r.is_leader();
  }

  int64_t Count(const std::string& sql) {
    pqxx::nontransaction tx(*db_);
    pqxx::result r = tx.exec(sql);
    return r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
  }

  // Triggers a probe job until the executor has run it: the dispatcher routes to it.
  void WaitUntilRoutable(jobwheel::v1::JobAdminService::Stub& admin) {
    absl::StatusOr<int64_t> probe = testing::RouteProbeJob(*stack_, admin, {0});
    ASSERT_TRUE(probe.ok()) << probe.status();
  }

  int64_t FinishedRuns(int64_t job, const std::string& extra = "") {
    return Count(
        absl::StrCat("SELECT count(*) FROM runs WHERE status >= 3 AND job_id = ", job, extra));
  }
};

TEST_F(FixDelayFailoverTest, RunsBackToBackNeverTwiceAtOnceThroughALeaderKill) {
  ASSERT_TRUE(stack_->StartScheduler(0).ok());
  ASSERT_TRUE(Eventually([&] { return IsLeader(0); }, absl::Seconds(10)));
  ASSERT_TRUE(stack_->StartScheduler(1).ok());
  ASSERT_TRUE(stack_->AddExecutor({}).ok());
  auto admin_a = Admin(0);
  ASSERT_NO_FATAL_FAILURE(WaitUntilRoutable(*admin_a));

  jobwheel::v1::CreateJobRequest create;
  jobwheel::v1::Job& j = *create.mutable_job();
  j.set_app("demo");
  j.set_name("fix-delay");
  j.set_handler("sleep");
  j.set_param(absl::StrCat(absl::ToInt64Milliseconds(kSleep)));
  *j.mutable_schedule()->mutable_fix_delay()->mutable_delay() = ToProtoDuration(kDelay);
  j.set_enabled(true);
  jobwheel::v1::CreateJobResponse created;
  grpc::Status s = admin_a->CreateJob(Ctx().get(), create, &created);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const int64_t job = created.job().id();
  EXPECT_TRUE(created.job().schedule().has_fix_delay());

  // A few runs under replica a, then SIGKILL it mid-chain (a run in flight or a fire waiting).
  ASSERT_TRUE(Eventually([&] { return FinishedRuns(job) >= 4; }, absl::Seconds(30)))
      << FinishedRuns(job) << " runs finished";
  Process& a = *stack_->scheduler_process(0).proc;
  a.Signal(SIGKILL);
  const absl::Time killed = RealClock::Get().Now();
  ASSERT_TRUE(a.Wait(absl::Seconds(5)).ok());
  ASSERT_TRUE(Eventually([&] { return IsLeader(1); }, absl::Seconds(15)));
  const absl::Time took_over = RealClock::Get().Now();
  const int64_t before_kill =
      FinishedRuns(job, absl::StrCat(" AND end_time < '", ToPgTimestamp(killed), "'"));

  // The chain goes on under replica b: four more runs started after the kill.
  ASSERT_TRUE(Eventually(
      [&] {
        const std::string after =
            absl::StrCat(" AND start_time > '", ToPgTimestamp(took_over), "'");
        return FinishedRuns(job, after) >= 5;
      },
      absl::Seconds(40)))
      << FinishedRuns(job) << " runs finished";
  auto admin_b = Admin(1);
  jobwheel::v1::PauseJobRequest pause;
  pause.set_id(job);
  jobwheel::v1::PauseJobResponse paused;
  s = admin_b->PauseJob(Ctx().get(), pause, &paused);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(Eventually(
      [&] {
        return Count(absl::StrCat("SELECT count(*) FROM runs WHERE status IN (1, 2) AND job_id = ",
                                  job)) == 0 &&
               Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = 1 AND job_id = ",
                                  job)) == 0;
      },
      absl::Seconds(20)));
  ASSERT_TRUE(Eventually(
      [&] {
        return testing::Ends(stack_->Executions(0), job).size() ==
               testing::Starts(stack_->Executions(0), job).size();
      },
      absl::Seconds(10)));

  // On the executor: start, end, start, end... and one start per fire.
  std::vector<testing::Execution> lines;
  for (const testing::Execution& e : stack_->Executions(0)) {
    if (e.job_id == job) lines.push_back(e);
  }
  std::map<int64_t, int> starts_per_fire;
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].start, i % 2 == 0) << "line " << i << ": two runs at once";
    if (i % 2 == 1) EXPECT_EQ(lines[i].run_id, lines[i - 1].run_id) << "line " << i;
    if (lines[i].start) ++starts_per_fire[lines[i].fire_id];
  }
  for (const auto& [fire, n] : starts_per_fire) EXPECT_EQ(n, 1) << "fire " << fire;

  // In the database: one run per fire, all SUCCEEDED, in sequence.
  struct R {
    int64_t fire;
    int status;
    absl::Time start, end;
  };
  std::vector<R> runs;
  {
    pqxx::nontransaction tx(*db_);
    for (const pqxx::row& r : tx.exec_params(
             "SELECT fire_id, status, (EXTRACT(EPOCH FROM start_time) * 1000000)::BIGINT, "
             "(EXTRACT(EPOCH FROM end_time) * 1000000)::BIGINT FROM runs WHERE job_id = $1 "
             "ORDER BY start_time",
             job)) {
      runs.push_back({r[0].as<int64_t>(), r[1].as<int>(), FromMicros(r[2].as<int64_t>()),
                      FromMicros(r[3].as<int64_t>())});
    }
  }
  EXPECT_EQ(static_cast<int64_t>(runs.size()),
            Count(absl::StrCat("SELECT count(*) FROM fires WHERE job_id = ", job)));
  EXPECT_EQ(runs.size(), starts_per_fire.size());
  ASSERT_GE(runs.size(), 8u);
  EXPECT_GE(before_kill, 4);
  std::vector<absl::Duration> steady;
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].status, 3) << "run of fire " << runs[i].fire;
    if (i == 0) continue;
    const absl::Duration gap = runs[i].start - runs[i - 1].end;
    // Times come from the executor's clock; the next fire is computed from its end time.
    EXPECT_GE(gap, kDelay - absl::Milliseconds(20)) << "run " << i << " started too early";
    // The interval the leader was gone in (and the new leader's first second) is left out.
    const bool across_kill =
        runs[i].start > killed && runs[i - 1].start < took_over + absl::Seconds(1);
    std::cout << "run " << i << ": " << absl::FormatDuration(runs[i].start - runs[i - 1].start)
              << " after the previous start" << (across_kill ? " (across the kill)" : "") << "\n";
    if (!across_kill) steady.push_back(runs[i].start - runs[i - 1].start);
  }
  ASSERT_GE(steady.size(), 4u);
  std::sort(steady.begin(), steady.end());
  const absl::Duration median = steady[steady.size() / 2];
  std::cout << "start-to-start median " << absl::FormatDuration(median) << ", max "
            << absl::FormatDuration(steady.back()) << " over " << steady.size() << " runs\n";
  EXPECT_GE(median, kSleep + kDelay - absl::Milliseconds(20));
  EXPECT_LE(median, kSleep + kDelay + absl::Milliseconds(300));
  EXPECT_LE(steady.back(), kSleep + kDelay + absl::Milliseconds(900));
}

}  // namespace
}  // namespace jobwheel
