// DiffJobs: the field-level changes the audit trail records.
#include "services/scheduler/admin/audit_diff.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::v1::Job;

std::vector<std::string> Lines(const std::vector<jobwheel::v1::AuditFieldChange>& changes) {
  std::vector<std::string> out;
  for (const auto& c : changes) out.push_back(c.field() + ": " + c.before() + " -> " + c.after());
  return out;
}

Job Sample() {
  Job j;
  j.set_id(7);
  j.set_app("demo");
  j.set_name("nightly");
  j.mutable_schedule()->mutable_cron()->set_expression("0 0 2 * * ?");
  j.set_enabled(true);
  j.add_alarm_contacts("a@example.com");
  j.add_alarm_contacts("b@example.com");
  (*j.mutable_labels())["team"] = "payments";
  (*j.mutable_labels())["tier"] = "batch";
  j.mutable_update_time()->set_seconds(100);
  return j;
}

TEST(AuditDiffTest, AnUpdateNamesOnlyTheChangedFieldsWithBeforeAndAfter) {
  const Job before = Sample();
  Job after = before;
  after.set_name("nightly-2");
  after.set_enabled(false);
  after.mutable_update_time()->set_seconds(200);  // The system's: not a change.
  after.set_script_version(3);                    // Likewise.
  EXPECT_EQ(
      Lines(DiffJobs(&before, &after)),
      (std::vector<std::string>{"name: \"nightly\" -> \"nightly-2\"", "enabled: true -> false"}));
}

TEST(AuditDiffTest, CreateAndDeleteListEveryFieldSetRepeatedJoinedMapsSorted) {
  const Job job = Sample();
  const std::vector<std::string> created = Lines(DiffJobs(nullptr, &job));
  EXPECT_EQ(created, (std::vector<std::string>{
                         "app:  -> \"demo\"", "name:  -> \"nightly\"",
                         "alarm_contacts:  -> \"a@example.com\", \"b@example.com\"",
                         "schedule:  -> cron { expression: \"0 0 2 * * ?\" }", "enabled:  -> true",
                         "labels:  -> key: \"team\" value: \"payments\", key: \"tier\" value: "
                         "\"batch\""}));
  EXPECT_EQ(DiffJobs(&job, nullptr).size(), created.size());
  EXPECT_EQ(DiffJobs(&job, nullptr)[1].before(), "\"nightly\"");
}

TEST(AuditDiffTest, ScriptSourceIsSummarisedNeverCopied) {
  Job before = Sample();
  before.set_script_source("echo secret-token-123");
  before.set_script_version(1);
  Job after = before;
  after.set_script_source("echo other-secret-456");
  after.set_script_version(2);
  const auto changes = DiffJobs(&before, &after);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].field(), "script_source");
  EXPECT_EQ(changes[0].before(), "(21 bytes, version 1)");
  EXPECT_EQ(changes[0].after(), "(21 bytes, version 2)");
  // The same source under another version is no change.
  after.set_script_source(before.script_source());
  EXPECT_TRUE(DiffJobs(&before, &after).empty());
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
