#ifndef JOBWHEEL_COMMON_TESTING_STACK_TEST_H_
#define JOBWHEEL_COMMON_TESTING_STACK_TEST_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/testing/stack.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "pqxx/pqxx"

// The gtest fixture of the multi-process tests: a fresh test database and the real registry,
// dispatcher, scheduler replicas and demo executors (common/testing/stack.h), plus small
// JobAdminService helpers that return statuses instead of asserting. TearDown stops the stack
// and prints its logs after a failure.
namespace jobwheel::testing {

// A job of app "demo" that fires only when triggered (NoSchedule), enabled.
jobwheel::v1::Job NewJob(const std::string& name, const std::string& handler,
                         const std::string& param);

class StackTest : public ::testing::Test {
 protected:
  // The default stack (one scheduler, leading), then ExecutorSpecs(). A test needing another
  // stack overrides SetUp and calls ASSERT_NO_FATAL_FAILURE(StartStack(options)).
  void SetUp() override;
  void TearDown() override;

  // Starts the stack's services and connects db_ to its database.
  void StartStack(const Stack::Options& options);

  // An admin call's context: the stack's admin token, a 5 s deadline.
  std::unique_ptr<grpc::ClientContext> Ctx() const;
  // A call's context presenting `token` (common/testing/client_context.h).
  static std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token,
                                                  absl::Duration deadline = absl::Seconds(10));

  // The executors SetUp starts (default: one demo executor of app "demo").
  virtual std::vector<Stack::ExecutorSpec> ExecutorSpecs() const { return {{}}; }

  absl::StatusOr<jobwheel::v1::Job> CreateJob(const jobwheel::v1::Job& job);
  absl::StatusOr<jobwheel::v1::Job> GetJob(int64_t id);
  // Returns the fire id.
  absl::StatusOr<int64_t> TriggerJob(int64_t job_id);
  absl::StatusOr<jobwheel::v1::Run> GetRun(int64_t id);
  // Every run of the job, oldest first (empty on error).
  std::vector<jobwheel::v1::Run> Runs(int64_t job_id);
  // The run's log lines as JobAdminService/GetRunLog returns them (empty on error).
  std::vector<std::string> RunLog(int64_t run_id);
  // The first column of the first row of `sql` on the stack's database (-1 on error or NULL).
  int64_t QueryInt(const std::string& sql);

  // Waits until the job has a run matching `pred` and returns it.
  absl::StatusOr<jobwheel::v1::Run> AwaitRun(
      int64_t job_id, const std::function<bool(const jobwheel::v1::Run&)>& pred,
      absl::Duration timeout);

  std::unique_ptr<Stack> stack_;
  // From StartStack: a connection to the stack's database.
  std::unique_ptr<pqxx::connection> db_;
  // From the default SetUp: the scheduler's JobAdminService.
  std::unique_ptr<jobwheel::v1::JobAdminService::Stub> admin_;
};

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_STACK_TEST_H_
