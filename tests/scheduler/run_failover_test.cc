// Run failover at the speed of detection: real PostgreSQL, registry, dispatcher, scheduler and
// demo executors. The registry takes an executor offline the moment its heartbeat stream
// closes (or its beats stop); the leader hears of it at once (the registry's announcements)
// and, after the offline grace (500 ms), makes its RUNNING runs LOST and writes their retries
// in the same transaction.
//  - kill -9 of an executor in the middle of a 30 s run of a job with a retry, a second
//    executor online: the run is LOST within 1 s of the kill (runs.end_time), and the retry
//    (attempt 1) is executing on the other executor within 2 s (its executions file, polled),
//    RUNNING in the database; each executor executed the job exactly once.
//  - an executor frozen (SIGSTOP) past the registry's beat deadline: its run becomes LOST;
//    resumed (SIGCONT), the same process registers again and the leader tells it to kill the
//    run (ExecutorService.Kill): the handler ends cancelled on that executor.
#include <signal.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/testing/stack_test.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "pqxx/pqxx"

namespace jobwheel {
namespace {

using testing::Eventually;
using testing::PickFreePort;
using testing::Stack;

constexpr int kRunning = 2;
constexpr int kLost = 7;

std::string Ms(absl::Duration d) { return absl::StrCat(absl::ToInt64Milliseconds(d), " ms"); }

class RunFailoverTest : public testing::StackTest {
 protected:
  void SetUp() override {
    Stack::Options options;
    options.migrate_database = true;
    options.executor_token = absl::StrCat("run-failover-executor-", PickFreePort());
    // Beats every 200 ms, an executor silent for 1 s is offline.
    options.registry.extra_flags = {"--beat_interval=200ms", "--beat_deadline=1s"};
    options.scheduler.extra_flags = {"--executor_offline_grace=500ms"};
    ASSERT_NO_FATAL_FAILURE(StartStack(options));
    admin_ = jobwheel::v1::JobAdminService::NewStub(
        grpc::CreateChannel(stack_->scheduler(0), grpc::InsecureChannelCredentials()));
  }

  // A job sleeping 30 s per run, triggered by hand only.
  int64_t CreateSleepJob(int retries) {
    jobwheel::v1::CreateJobRequest create;
    create.mutable_job()->set_app("demo");
    create.mutable_job()->set_name("long");
    create.mutable_job()->set_handler("sleep");
    create.mutable_job()->set_param("30000");
    create.mutable_job()->mutable_schedule()->mutable_none();
    create.mutable_job()->set_fail_retry_count(retries);
    create.mutable_job()->set_enabled(true);
    jobwheel::v1::CreateJobResponse created;
    grpc::Status s = admin_->CreateJob(Ctx().get(), create, &created);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return created.job().id();
  }

  void Trigger(int64_t job) {
    jobwheel::v1::TriggerJobRequest trigger;
    trigger.set_id(job);
    jobwheel::v1::TriggerJobResponse fired;
    grpc::Status s = admin_->TriggerJob(Ctx().get(), trigger, &fired);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // Starts of `job` at `attempt` on executor i.
  std::vector<testing::Execution> StartsOf(int i, int64_t job, int attempt) {
    std::vector<testing::Execution> out;
    for (const testing::Execution& e : testing::Starts(stack_->Executions(i), job)) {
      if (e.attempt == attempt) out.push_back(e);
    }
    return out;
  }

  // Waits until one executor of `n` executes `job`'s first attempt and its run is RUNNING;
  // returns the executor's index and sets `run_id`.
  int AwaitFirstAttempt(int n, int64_t job, int64_t* run_id) {
    int on = -1;
    EXPECT_TRUE(Eventually(
        [&] {
          for (int i = 0; i < n; ++i) {
            auto starts = StartsOf(i, job, 0);
            if (!starts.empty() && Count(absl::StrCat("SELECT status FROM runs WHERE id = ",
                                                      starts[0].run_id)) == kRunning) {
              on = i;
              *run_id = starts[0].run_id;
              return true;
            }
          }
          return false;
        },
        absl::Seconds(30)))
        << "the job never ran";
    return on;
  }

  int64_t Count(const std::string& sql) {
    pqxx::nontransaction tx(*db_);
    pqxx::result r = tx.exec(sql);
    return r.empty() || r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
  }

  absl::Time TimeOf(const std::string& sql) {
    pqxx::nontransaction tx(*db_);
    pqxx::result r =
        tx.exec(absl::StrCat("SELECT (EXTRACT(EPOCH FROM (", sql, ")) * 1000000)::BIGINT"));
    return r[0][0].is_null() ? absl::InfinitePast() : FromMicros(r[0][0].as<int64_t>());
  }

  std::unique_ptr<jobwheel::v1::JobAdminService::Stub> admin_;
};

TEST_F(RunFailoverTest, AKilledExecutorsRunIsLostAndRetriedOnTheOtherWithinSeconds) {
  for (int i = 0; i < 2; ++i) {
    auto index = stack_->AddExecutor({});
    ASSERT_TRUE(index.ok()) << index.status();
  }
  const int64_t job = CreateSleepJob(/*retries=*/1);
  Trigger(job);
  int64_t run = 0;
  const int victim = AwaitFirstAttempt(2, job, &run);
  ASSERT_GE(victim, 0);
  const int other = 1 - victim;

  const absl::Time killed = RealClock::Get().Now();
  stack_->executor_process(victim).Kill();

  ASSERT_TRUE(Eventually(
      [&] { return Count(absl::StrCat("SELECT status FROM runs WHERE id = ", run)) == kLost; },
      absl::Seconds(10)))
      << "the run never became LOST";
  const absl::Time lost = TimeOf(absl::StrCat("SELECT end_time FROM runs WHERE id = ", run));
  std::cout << "LOST " << Ms(lost - killed) << " after the kill" << std::endl;
  EXPECT_LT(lost - killed, absl::Seconds(1));
  {
    pqxx::nontransaction tx(*db_);
    EXPECT_TRUE(absl::StrContains(
        tx.exec(absl::StrCat("SELECT result_message FROM runs WHERE id = ", run))[0][0]
            .as<std::string>(),
        "went offline"));
  }

  absl::Time retried = absl::InfiniteFuture();
  ASSERT_TRUE(Eventually(
      [&] {
        if (StartsOf(other, job, 1).empty()) return false;
        retried = RealClock::Get().Now();
        return true;
      },
      absl::Seconds(10)))
      << "the retry never ran on the other executor";
  std::cout << "retry executing " << Ms(retried - killed) << " after the kill" << std::endl;
  EXPECT_LT(retried - killed, absl::Seconds(2));
  const int64_t retry_run = StartsOf(other, job, 1)[0].run_id;
  // The executor runs it before the dispatcher has recorded its answer: RUNNING follows.
  EXPECT_TRUE(Eventually(
      [&] {
        return Count(absl::StrCat("SELECT status FROM runs WHERE id = ", retry_run)) == kRunning;
      },
      absl::Seconds(5)));
  EXPECT_LT(TimeOf(absl::StrCat("SELECT start_time FROM runs WHERE id = ", retry_run)) - killed,
            absl::Seconds(2));
  // Counted on the executors: the first attempt ran once on the victim, the retry once on the
  // other, nothing else.
  EXPECT_EQ(testing::Starts(stack_->Executions(victim), job).size(), 1u);
  EXPECT_EQ(testing::Starts(stack_->Executions(other), job).size(), 1u);
  EXPECT_EQ(StartsOf(victim, job, 0).size(), 1u);
}

TEST_F(RunFailoverTest, AnExecutorBackAfterItsRunWasLostIsToldToKillIt) {
  auto index = stack_->AddExecutor({});
  ASSERT_TRUE(index.ok()) << index.status();
  const int64_t job = CreateSleepJob(/*retries=*/0);
  Trigger(job);
  int64_t run = 0;
  ASSERT_EQ(AwaitFirstAttempt(1, job, &run), 0);

  testing::Process& executor = stack_->executor_process(0);
  const absl::Time frozen = RealClock::Get().Now();
  executor.Signal(SIGSTOP);
  ASSERT_TRUE(Eventually(
      [&] { return Count(absl::StrCat("SELECT status FROM runs WHERE id = ", run)) == kLost; },
      absl::Seconds(15)))
      << "the run of the frozen executor never became LOST";
  std::cout << "LOST " << Ms(RealClock::Get().Now() - frozen) << " after the freeze" << std::endl;
  // Nothing ended on the executor yet: it is frozen.
  EXPECT_TRUE(testing::Ends(stack_->Executions(0), job).empty());

  executor.Signal(SIGCONT);
  ASSERT_TRUE(Eventually([&] { return !testing::Ends(stack_->Executions(0), job).empty(); },
                         absl::Seconds(20)))
      << "the resumed executor was never told to kill the LOST run";
  const std::vector<testing::Execution> ends = testing::Ends(stack_->Executions(0), job);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].run_id, run);
  EXPECT_TRUE(ends[0].cancelled) << "the handler ended without being cancelled";
  EXPECT_FALSE(ends[0].ok);
  EXPECT_EQ(testing::Starts(stack_->Executions(0), job).size(), 1u);
}

}  // namespace
}  // namespace jobwheel
