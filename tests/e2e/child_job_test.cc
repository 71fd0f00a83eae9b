// End to end: a child job runs after its parent succeeds (a PARENT fire started by the
// leader's follow-up monitor once the parent's run is SUCCEEDED), and not after a parent that
// failed. Executions are counted on the executor (the demo executor's --executions_file).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "tests/e2e/stack_test.h"

namespace jobwheel::e2e {
namespace {

using ::jobwheel::testing::Ends;
using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::Execution;
using ::jobwheel::testing::Starts;

class ChildJobTest : public StackTest {
 protected:
  // Waits until every run of `job_id` has been followed up (retries and children decided).
  bool AwaitFollowedUp(int64_t job_id) {
    return Eventually(
        [&] {
          return QueryInt(absl::StrCat("SELECT count(*) FROM runs WHERE job_id = ", job_id,
                                       " AND NOT (followup_done AND status >= 3)")) == 0;
        },
        absl::Seconds(20));
  }

  // Position of the line in the executor's record (all on executor 0).
  static int IndexOf(const std::vector<Execution>& all, int64_t run_id, bool start) {
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].run_id == run_id && all[i].start == start) return static_cast<int>(i);
    }
    return -1;
  }
};

TEST_F(ChildJobTest, ChildRunsAfterItsParentSucceeds) {
  auto child = CreateJob(NewJob("child", "echo", "from-child"));
  ASSERT_TRUE(child.ok()) << child.status();
  jobwheel::v1::Job parent_job = NewJob("parent", "echo", "from-parent");
  parent_job.add_child_job_ids(child->id());
  auto parent = CreateJob(parent_job);
  ASSERT_TRUE(parent.ok()) << parent.status();
  ASSERT_EQ(parent->child_job_ids_size(), 1);

  ASSERT_TRUE(TriggerJob(parent->id()).ok());
  auto child_run = AwaitRun(
      child->id(),
      [](const jobwheel::v1::Run& r) { return r.status() == jobwheel::v1::RUN_STATUS_SUCCEEDED; },
      absl::Seconds(30));
  ASSERT_TRUE(child_run.ok()) << child_run.status();
  ASSERT_TRUE(AwaitFollowedUp(parent->id()));
  ASSERT_TRUE(AwaitFollowedUp(child->id()));

  const std::vector<jobwheel::v1::Run> parent_runs = Runs(parent->id());
  const std::vector<jobwheel::v1::Run> child_runs = Runs(child->id());
  ASSERT_EQ(parent_runs.size(), 1u);
  ASSERT_EQ(child_runs.size(), 1u);
  const jobwheel::v1::Run& p = parent_runs[0];
  const jobwheel::v1::Run& c = child_runs[0];
  EXPECT_EQ(p.status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(c.status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(c.trigger_type(), jobwheel::v1::TRIGGER_TYPE_PARENT);
  EXPECT_EQ(c.result_message(), "from-child");
  EXPECT_EQ(c.attempt(), 0);
  // The child's fire names the parent run, and was triggered after the parent ended.
  EXPECT_EQ(QueryInt(absl::StrCat("SELECT parent_run_id FROM fires WHERE id = ", c.fire_id())),
            p.id());
  EXPECT_GE(FromProto(c.trigger_time()), FromProto(p.end_time()));
  EXPECT_GE(FromProto(c.start_time()), FromProto(p.end_time()));

  // On the executor: each ran once, the child's handler only after the parent's returned.
  const std::vector<Execution> all = stack_->Executions(0);
  ASSERT_EQ(Starts(all, parent->id()).size(), 1u);
  ASSERT_EQ(Starts(all, child->id()).size(), 1u);
  ASSERT_EQ(Ends(all, child->id()).size(), 1u);
  EXPECT_EQ(Starts(all, child->id())[0].run_id, c.id());
  const int parent_end = IndexOf(all, p.id(), /*start=*/false);
  const int child_start = IndexOf(all, c.id(), /*start=*/true);
  ASSERT_GE(parent_end, 0);
  EXPECT_GT(child_start, parent_end);
}

TEST_F(ChildJobTest, ChildDoesNotRunAfterItsParentFails) {
  auto child = CreateJob(NewJob("child", "echo", "from-child"));
  ASSERT_TRUE(child.ok()) << child.status();
  jobwheel::v1::Job parent_job = NewJob("failing-parent", "fail", "");
  parent_job.add_child_job_ids(child->id());
  auto parent = CreateJob(parent_job);
  ASSERT_TRUE(parent.ok()) << parent.status();

  ASSERT_TRUE(TriggerJob(parent->id()).ok());
  auto failed = AwaitRun(
      parent->id(),
      [](const jobwheel::v1::Run& r) { return r.status() == jobwheel::v1::RUN_STATUS_FAILED; },
      absl::Seconds(30));
  ASSERT_TRUE(failed.ok()) << failed.status();
  // Once the failed run is followed up, the leader has decided: no child fire.
  ASSERT_TRUE(AwaitFollowedUp(parent->id()));
  EXPECT_EQ(QueryInt(absl::StrCat("SELECT count(*) FROM fires WHERE job_id = ", child->id())), 0);
  EXPECT_TRUE(Runs(child->id()).empty());
  EXPECT_TRUE(Starts(stack_->Executions(0), child->id()).empty());
  EXPECT_EQ(Starts(stack_->Executions(0), parent->id()).size(), 1u);
}

}  // namespace
}  // namespace jobwheel::e2e
