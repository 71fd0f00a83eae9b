#include "services/scheduler/admin/job_access.h"

#include "gtest/gtest.h"
#include "services/scheduler/admin/job_store.h"

namespace jobwheel::scheduler::admin {
namespace {

Principal Make(Role role, std::vector<std::string> apps, bool all = false) {
  Principal p;
  p.role = role;
  p.apps = std::move(apps);
  p.all_apps = all;
  p.name = "t";
  return p;
}

jobwheel::v1::Job Job(const std::string& app, jobwheel::v1::GlueType glue) {
  jobwheel::v1::Job j;
  j.set_id(7);
  j.set_app(app);
  j.set_glue_type(glue);
  return j;
}

constexpr auto kHandler = jobwheel::v1::GLUE_TYPE_HANDLER;
constexpr auto kShell = jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL;
constexpr auto kPython = jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON;

TEST(JobAccessTest, CreateNeedsWriteAccessAndAdminForScripts) {
  const Principal admin = Make(Role::kAdmin, {}, true);
  const Principal op = Make(Role::kOperator, {"demo"});
  const Principal viewer = Make(Role::kViewer, {}, true);
  EXPECT_TRUE(CheckCreate(admin, Job("any", kShell)).ok());
  EXPECT_TRUE(CheckCreate(op, Job("demo", kHandler)).ok());
  EXPECT_EQ(CheckCreate(op, Job("other", kHandler)).code(), absl::StatusCode::kPermissionDenied);
  absl::Status s = CheckCreate(op, Job("demo", kPython));
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message().rfind("job.glue_type:", 0), 0u) << s;
  EXPECT_EQ(CheckCreate(viewer, Job("demo", kHandler)).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckWriter(viewer, "CreateJob").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(CheckWriter(op, "CreateJob").ok());
}

TEST(JobAccessTest, EditChecksBothAppsAndBothGlueTypes) {
  const Principal op = Make(Role::kOperator, {"demo", "demo2"});
  EXPECT_TRUE(CheckEdit(op, Job("demo", kHandler), Job("demo2", kHandler)).ok());
  // Another app's job is answered like a missing one.
  EXPECT_EQ(CheckEdit(op, Job("other", kHandler), Job("demo", kHandler)).code(),
            absl::StatusCode::kNotFound);
  absl::Status s = CheckEdit(op, Job("demo", kHandler), Job("other", kHandler));
  EXPECT_EQ(s.message().rfind("job.app:", 0), 0u) << s;
  EXPECT_EQ(CheckEdit(op, Job("demo", kShell), Job("demo", kShell)).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckEdit(op, Job("demo", kShell), Job("demo", kHandler)).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(CheckEdit(Make(Role::kAdmin, {}, true), Job("a", kShell), Job("b", kPython)).ok());
}

TEST(JobAccessTest, ListScope) {
  const Principal op = Make(Role::kOperator, {"demo"});
  auto scope = ListScope(op, "");
  ASSERT_TRUE(scope.ok());
  ASSERT_TRUE(scope->has_value());
  EXPECT_EQ(**scope, std::vector<std::string>{"demo"});
  EXPECT_EQ(ListScope(op, "other").status().code(), absl::StatusCode::kPermissionDenied);
  scope = ListScope(op, "demo");
  ASSERT_TRUE(scope.ok());
  EXPECT_FALSE(scope->has_value());
  scope = ListScope(Make(Role::kViewer, {}, true), "");
  ASSERT_TRUE(scope.ok());
  EXPECT_FALSE(scope->has_value());
  // A principal that reads nothing lists nothing.
  scope = ListScope(Make(Role::kExecutor, {"demo"}), "");
  ASSERT_TRUE(scope.ok());
  ASSERT_TRUE(scope->has_value());
  EXPECT_TRUE((*scope)->empty());
}

TEST(JobAccessTest, ReadAndWrite) {
  const Principal viewer = Make(Role::kViewer, {"demo"});
  EXPECT_TRUE(CheckRead(viewer, "demo", "run 1").ok());
  EXPECT_EQ(CheckRead(viewer, "other", "run 1").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckWrite(viewer, "demo", "run 1").code(), absl::StatusCode::kPermissionDenied);
  absl::Status s = CheckWrite(Make(Role::kOperator, {"demo"}), "other", "run 12");
  EXPECT_EQ(s.message().rfind("run 12:", 0), 0u) << s;
}

TEST(JobAccessTest, OtherAppsIdsLookMissingAndWriterScopesFollowTheRole) {
  const Principal op = Make(Role::kOperator, {"demo"});
  EXPECT_TRUE(CheckVisible(op, "demo", JobNotFoundError(7)).ok());
  absl::Status hidden = CheckVisible(op, "billing", JobNotFoundError(7));
  EXPECT_EQ(hidden, JobNotFoundError(7));
  EXPECT_EQ(CheckVisible(Make(Role::kViewer, {}), "demo", RunNotFoundError(3)),
            RunNotFoundError(3));  // A viewer of no app sees nothing.
  EXPECT_FALSE(WritableApps(Make(Role::kAdmin, {}, true)).has_value());
  EXPECT_FALSE(WritableApps(Make(Role::kOperator, {"*"}, true)).has_value());
  EXPECT_EQ(WritableApps(op), std::optional<std::vector<std::string>>({"demo"}));
  EXPECT_EQ(WritableApps(Make(Role::kViewer, {}, true)),
            std::optional<std::vector<std::string>>(std::vector<std::string>()));
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
