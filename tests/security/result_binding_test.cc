// Results are bound to their run, with the real binaries: every run carries a per-run result
// key that only its executor receives. Another process holding a valid executor token (the
// very same shared executor token) cannot finish a run it was not given: a result without the
// key, or with a wrong one, is refused (refused_run_ids), the run stays RUNNING, and the real
// executor's result is recorded when the handler returns.
#include <cstdint>
#include <memory>
#include <string>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "pqxx/pqxx"

namespace jobwheel::security_testing {
namespace {

using testing::Ctx;
using testing::Eventually;
using testing::Stack;

std::string RandomToken(const std::string& prefix) {
  absl::BitGen gen;
  return absl::StrCat(prefix, absl::Hex(absl::Uniform<uint64_t>(gen), absl::kZeroPad16),
                      absl::Hex(absl::Uniform<uint64_t>(gen), absl::kZeroPad16));
}

struct RunRow {
  int status = 0;
  std::string result_message;
  std::string late_result;
};

class ResultBindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Stack::Options options;
    options.executor_token = RandomToken("shared-executor-");
    options.metrics = true;
    stack_ = std::make_unique<Stack>(options);
    absl::Status started = stack_->StartServices();
    ASSERT_TRUE(started.ok()) << started << "\n" << stack_->Logs();
    auto executor = stack_->AddExecutor(Stack::ExecutorSpec{});  // The shared token.
    ASSERT_TRUE(executor.ok()) << executor.status() << "\n" << stack_->Logs();
    executor_token_ = options.executor_token;
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << stack_->Logs();
    stack_->Stop();
  }

  int64_t CreateSleepJob() {
    auto jobs = v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
    v1::CreateJobRequest create;
    v1::Job* job = create.mutable_job();
    job->set_app("demo");
    job->set_name("sleeper");
    job->set_handler("sleep");
    job->set_param("4000");
    job->set_routing_strategy(v1::ROUTING_STRATEGY_FIRST);
    job->mutable_schedule()->mutable_none();
    job->set_enabled(true);
    v1::CreateJobResponse created;
    grpc::Status s = jobs->CreateJob(Ctx(stack_->admin_token()).get(), create, &created);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return created.job().id();
  }

  // The id of the job's first run once it is RUNNING (0 if it never is).
  int64_t RunningRunOf(int64_t job_id) {
    int64_t run_id = 0;
    Eventually(
        [&] {
          pqxx::connection conn(stack_->dsn());
          pqxx::nontransaction tx(conn);
          pqxx::result r = tx.exec_params(
              "SELECT id FROM runs WHERE job_id = $1 AND status = $2 ORDER BY id LIMIT 1", job_id,
              static_cast<int>(v1::RUN_STATUS_RUNNING));
          if (r.empty()) return false;
          run_id = r[0][0].as<int64_t>();
          return true;
        },
        absl::Seconds(30));
    return run_id;
  }

  RunRow Row(int64_t run_id) {
    pqxx::connection conn(stack_->dsn());
    pqxx::nontransaction tx(conn);
    pqxx::row r = tx.exec_params1(
        "SELECT status, COALESCE(result_message, ''), COALESCE(late_result, '') FROM runs "
        "WHERE id = $1",
        run_id);
    return RunRow{r[0].as<int>(), r[1].as<std::string>(), r[2].as<std::string>()};
  }

  std::unique_ptr<Stack> stack_;
  std::string executor_token_;
};

TEST_F(ResultBindingTest, AnotherTokenHolderCannotFinishARunItWasNotGiven) {
  const int64_t job = CreateSleepJob();
  ASSERT_GT(job, 0);
  auto jobs = v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
  v1::TriggerJobRequest trigger;
  trigger.set_id(job);
  v1::TriggerJobResponse triggered;
  grpc::Status s = jobs->TriggerJob(Ctx(stack_->admin_token()).get(), trigger, &triggered);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const int64_t run_id = RunningRunOf(job);
  ASSERT_GT(run_id, 0) << "the run never reached RUNNING";

  // The forger: this process, with the executor token every executor of the stack holds.
  auto dispatcher = v1::DispatcherService::NewStub(stack_->Channel(stack_->dispatcher()));
  auto forge = [&](const std::string& key) {
    v1::ReportResultsRequest report;
    v1::RunResult* r = report.add_results();
    r->set_run_id(run_id);
    r->set_status(v1::RUN_STATUS_SUCCEEDED);
    r->set_message("forged: all fine");
    r->set_executor_address(stack_->executor(0));
    if (!key.empty()) r->set_result_key(key);
    v1::ReportResultsResponse response;
    grpc::Status status = dispatcher->ReportResults(Ctx(executor_token_).get(), report, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.acked_run_ids_size(), 0);
    ASSERT_EQ(response.refused_run_ids_size(), 1);
    EXPECT_EQ(response.refused_run_ids(0), run_id);
  };
  forge("");                             // No key.
  forge(std::string(32, '\0'));          // A wrong key of the right size.
  forge(RandomToken("").substr(0, 32));  // Another wrong one.
  const RunRow during = Row(run_id);
  EXPECT_EQ(during.status, v1::RUN_STATUS_RUNNING);
  EXPECT_EQ(during.result_message, "");
  EXPECT_EQ(during.late_result, "");

  // The real executor's result (with the key) is recorded when its handler returns.
  ASSERT_TRUE(
      Eventually([&] { return Row(run_id).status != v1::RUN_STATUS_RUNNING; }, absl::Seconds(30)));
  const RunRow after = Row(run_id);
  EXPECT_EQ(after.status, v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(after.result_message, "slept 4000 ms");
  EXPECT_EQ(after.late_result, "");
  // It ran once, on the executor it was given.
  int starts = 0;
  for (const auto& e : stack_->Executions()) starts += e.start && e.run_id == run_id;
  EXPECT_EQ(starts, 1);

  // The refusals are counted and logged, without the key.
  const std::string log = testing::ReadFile(stack_->dir() + "/dispatcher.log");
  EXPECT_TRUE(absl::StrContains(log, absl::StrCat("result for run ", run_id)) &&
              absl::StrContains(log, "refused"))
      << log;
}

}  // namespace
}  // namespace jobwheel::security_testing
