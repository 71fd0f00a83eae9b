#ifndef JOBWHEEL_TESTS_E2E_STACK_TEST_H_
#define JOBWHEEL_TESTS_E2E_STACK_TEST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/testing/stack.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"

// A gtest fixture for end-to-end tests: a fresh test database and the real registry,
// dispatcher, scheduler (leading) and demo executors (common/testing/stack.h), plus small
// JobAdminService helpers that return statuses instead of asserting.
namespace jobwheel::e2e {

using testing::Stack;

// A job of app "demo" that fires only when triggered (NoSchedule), enabled.
jobwheel::v1::Job NewJob(const std::string& name, const std::string& handler,
                         const std::string& param);

class StackTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

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
  std::unique_ptr<jobwheel::v1::JobAdminService::Stub> admin_;
};

}  // namespace jobwheel::e2e

#endif  // JOBWHEEL_TESTS_E2E_STACK_TEST_H_
