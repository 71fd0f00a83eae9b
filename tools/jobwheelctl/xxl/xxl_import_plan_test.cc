#include "tools/jobwheelctl/xxl/xxl_import_plan.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::ctl::xxl {
namespace {

MappedJob Mapped(int64_t xxl_id, const std::string& app, std::vector<int64_t> children = {}) {
  XxlJob j;
  j.id = xxl_id;
  j.job_group = 1;
  j.job_desc = "d";
  j.executor_handler = "h";
  j.child_job_ids = std::move(children);
  return MapXxlJob(j, app, MappingOptions{});
}

v1::Job Existing(int64_t id, const MappedJob& m) {
  v1::Job j = m.job;
  j.set_id(id);
  return j;
}

TEST(XxlImportPlanTest, MatchesEarlierImportsByAppAndXxlId) {
  MappedJob a = Mapped(1, "demo");
  MappedJob b = Mapped(2, "demo");
  MappedJob c = Mapped(3, "other");
  MappedJob skipped = Mapped(4, "demo");
  skipped.skip = "glue_type GLUE_GROOVY: ...";
  v1::Job renamed = Existing(11, a);
  renamed.set_name("xxl-1-renamed since");  // The description changed: still the same job.
  v1::Job later_copy = Existing(15, a);
  v1::Job relabelled = Existing(16, c);  // Renamed entirely: its label still says xxl job 3.
  relabelled.set_name("nightly");
  v1::Job other_app = Existing(12, b);
  other_app.set_app("elsewhere");
  v1::Job not_imported = Existing(13, c);
  not_imported.set_name("nightly");
  not_imported.clear_labels();
  std::vector<PlannedJob> plan =
      PlanImport({a, b, c, skipped}, {later_copy, renamed, other_app, not_imported, relabelled});
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].action, ImportAction::kExists);
  EXPECT_EQ(plan[0].existing.id(), 11);  // The lowest id of the two.
  EXPECT_TRUE(plan[0].differs.empty());
  EXPECT_EQ(plan[1].action, ImportAction::kCreate);  // Its namesake is in another app.
  EXPECT_EQ(plan[2].action, ImportAction::kExists);
  EXPECT_EQ(plan[2].existing.id(), 16);
  EXPECT_EQ(plan[3].action, ImportAction::kSkip);
}

TEST(XxlImportPlanTest, NamesTheFieldsAnExistingJobDiffersIn) {
  MappedJob a = Mapped(1, "demo");
  v1::Job have = Existing(11, a);
  have.set_enabled(!a.job.enabled());
  have.set_param("changed");
  have.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(5);
  std::vector<PlannedJob> plan = PlanImport({a}, {have});
  ASSERT_EQ(plan[0].action, ImportAction::kExists);
  EXPECT_EQ(plan[0].differs, (std::vector<std::string>{"schedule", "param", "enabled"}));

  // What the scheduler fills in (UTC for an empty cron zone) is no difference.
  v1::Job want = a.job;
  want.mutable_schedule()->mutable_cron()->set_expression("0 * * * * ?");
  v1::Job stored = want;
  stored.mutable_schedule()->mutable_cron()->set_time_zone("UTC");
  EXPECT_TRUE(DifferingFields(want, stored).empty());
}

TEST(XxlImportPlanTest, ChildChainResolvesToJobwheelIds) {
  // 1 -> 2 -> 3, and 3 -> 4 (skipped) and 9 (neither in the export nor imported).
  PlannedJob one{Mapped(1, "demo", {2})};
  PlannedJob two{Mapped(2, "demo", {3})};
  PlannedJob three{Mapped(3, "demo", {4, 9})};
  const std::map<int64_t, int64_t> ids = {{1, 101}, {2, 102}, {3, 103}};
  const std::map<int64_t, std::string> skipped = {{4, "skipped"}};
  EXPECT_EQ(ResolveChildren(one, ids, skipped).ids, (std::vector<int64_t>{102}));
  EXPECT_EQ(ResolveChildren(two, ids, skipped).ids, (std::vector<int64_t>{103}));
  ChildLinks links = ResolveChildren(three, ids, skipped);
  EXPECT_TRUE(links.ids.empty());
  ASSERT_EQ(links.dropped.size(), 2u);
  EXPECT_TRUE(absl::StrContains(links.dropped[0], "child xxl job 4 is not imported (skipped)"))
      << links.dropped[0];
  EXPECT_TRUE(absl::StrContains(links.dropped[1], "child xxl job 9 is not in the export"))
      << links.dropped[1];
}

TEST(XxlImportPlanTest, SameChildrenIgnoresOrder) {
  EXPECT_TRUE(SameChildren({1, 2}, {2, 1}));
  EXPECT_TRUE(SameChildren({}, {}));
  EXPECT_FALSE(SameChildren({1}, {1, 2}));
}

}  // namespace
}  // namespace jobwheel::ctl::xxl
