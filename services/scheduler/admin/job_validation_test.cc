#include "services/scheduler/admin/job_validation.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::v1::Job;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const absl::Time kCreated = absl::FromUnixSeconds(1700000000) + absl::Milliseconds(250);

Job ValidJob() {
  Job job;
  job.set_app("demo");
  job.set_name("nightly report");
  job.set_handler("report.nightly");
  job.mutable_schedule()->mutable_cron()->set_expression("0 0 2 * * ?");
  job.set_enabled(true);
  return job;
}

Job Parse(const std::string& text) {
  Job job;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &job)) << text;
  return job;
}

TEST(NormalizeJobTest, AcceptsValidJobAndAppliesDefaults) {
  Job in = ValidJob();
  in.set_id(99);
  in.set_script_version(7);
  *in.mutable_create_time() = ToProto(absl::FromUnixSeconds(5));
  auto out = NormalizeJob(in, kCreated);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->id(), 0);
  EXPECT_EQ(out->script_version(), 0);
  EXPECT_FALSE(out->has_create_time());
  EXPECT_EQ(out->misfire_strategy(), jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING);
  EXPECT_EQ(out->routing_strategy(), jobwheel::v1::ROUTING_STRATEGY_FIRST);
  EXPECT_EQ(out->block_strategy(), jobwheel::v1::BLOCK_STRATEGY_SERIAL_EXECUTION);
  EXPECT_EQ(out->glue_type(), jobwheel::v1::GLUE_TYPE_HANDLER);
  EXPECT_EQ(out->schedule().cron().time_zone(), "UTC");
}

// Quartz accepts expressions that can never fire; an enabled job with one is refused.
TEST(NormalizeJobTest, RefusesEnabledCronJobThatNeverFires) {
  for (const char* expression : {"0 0 0 30 2 ?",               // no February 30th
                                 "0 0 0 1 1 ? 2020",           // a past year (kCreated is 2023)
                                 "0 0 0 ? 2 MON#5 2024-2030",  // no 5th Monday in those Febs
                                 "0 0 L * * ?"}) {             // Quartz throws: no hour
    SCOPED_TRACE(expression);
    Job job = ValidJob();
    job.mutable_schedule()->mutable_cron()->set_expression(expression);
    absl::StatusOr<Job> out = NormalizeJob(job, kCreated);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(
        std::string(out.status().message()),
        StartsWith(absl::StrCat("job.schedule.cron.expression: \"", expression, "\" never fires")));
    // Disabled, it may be stored (and is refused again when resumed).
    job.set_enabled(false);
    EXPECT_TRUE(NormalizeJob(job, kCreated).ok());
  }
  // One more fire time is enough.
  Job job = ValidJob();
  job.mutable_schedule()->mutable_cron()->set_expression("0 0 0 ? 2 MON#5 2024-2030,2044");
  EXPECT_TRUE(NormalizeJob(job, kCreated).ok());
}

TEST(NormalizeJobTest, AnchorsFixRateAtCreationSecond) {
  Job in = ValidJob();
  in.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(30);
  auto out = NormalizeJob(in, kCreated);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(FromProto(out->schedule().fix_rate().start_time()), absl::FromUnixSeconds(1700000000));
}

TEST(NormalizeJobTest, TruncatesTimeoutToMilliseconds) {
  Job in = ValidJob();
  in.mutable_timeout()->set_seconds(2);
  in.mutable_timeout()->set_nanos(1500000 + 7);
  auto out = NormalizeJob(in, kCreated);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(FromProto(out->timeout()), absl::Milliseconds(2001));
}

struct BadCase {
  std::string patch;   // Text-format Job fields merged over ValidJob().
  std::string prefix;  // Expected start of the error message.
};

class BadJobTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadJobTest, RejectsNamingTheField) {
  Job job = ValidJob();
  job.MergeFrom(Parse(GetParam().patch));
  auto out = NormalizeJob(job, kCreated);
  ASSERT_FALSE(out.ok()) << GetParam().patch;
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), StartsWith(GetParam().prefix))
      << GetParam().patch;
}

std::string Repeat(char c, int n) { return std::string(n, c); }

INSTANTIATE_TEST_SUITE_P(
    Table, BadJobTest,
    ::testing::Values(
        BadCase{"app: 'bad app'", "job.app: invalid character ' '"},
        BadCase{"app: '" + Repeat('a', 65) + "'", "job.app: must be at most 64"},
        BadCase{"name: '   '", "job.name: must not be empty"},
        BadCase{"name: '" + Repeat('n', 129) + "'", "job.name: must be at most 128"},
        BadCase{"description: '" + Repeat('d', 1025) + "'", "job.description: must be at most"},
        BadCase{"owner: '" + Repeat('o', 129) + "'", "job.owner: must be at most"},
        BadCase{"alarm_contacts: 'a@x' alarm_contacts: ''", "job.alarm_contacts[1]: must not be"},
        BadCase{"alarm_contacts: '" + Repeat('c', 257) + "'", "job.alarm_contacts[0]: must be at"},
        BadCase{"schedule { cron { expression: 'nonsense' } }", "job.schedule.cron: "},
        BadCase{"schedule { fix_rate { interval_seconds: 0 } }",
                "job.schedule.fix_rate.interval_seconds: "},
        BadCase{"misfire_strategy: 17", "job.misfire_strategy: unknown value 17"},
        BadCase{"routing_strategy: 99", "job.routing_strategy: unknown value 99"},
        BadCase{"block_strategy: 4", "job.block_strategy: unknown value 4"},
        BadCase{"glue_type: 9", "job.glue_type: unknown value 9"},
        BadCase{"handler: 'has space'", "job.handler: invalid character"},
        BadCase{"handler: '" + Repeat('h', 129) + "'", "job.handler: must be at most 128"},
        BadCase{"script_source: 'echo hi'",
                "job.script_source: must be empty for glue_type GLUE_TYPE_HANDLER"},
        BadCase{"glue_type: GLUE_TYPE_SCRIPT_SHELL",
                "job.script_source: must not be empty for glue_type GLUE_TYPE_SCRIPT_SHELL"},
        BadCase{"param: '" + Repeat('p', 64 * 1024 + 1) + "'", "job.param: must be at most 65536"},
        BadCase{"timeout { seconds: -1 }", "job.timeout: must not be negative"},
        BadCase{"timeout { seconds: 604801 }", "job.timeout: must be at most"},
        BadCase{"fail_retry_count: 101", "job.fail_retry_count: must be between 0 and 100"},
        BadCase{"fail_retry_count: -1", "job.fail_retry_count: must be between 0 and 100"},
        BadCase{"child_job_ids: 3 child_job_ids: 0", "job.child_job_ids[1]: must be a positive"},
        BadCase{"child_job_ids: 3 child_job_ids: 4 child_job_ids: 3",
                "job.child_job_ids[2]: duplicate job 3"}));

TEST(NormalizeJobTest, MissingFieldsNamed) {
  Job job = ValidJob();
  job.clear_app();
  EXPECT_EQ(NormalizeJob(job, kCreated).status().message(), "job.app: must not be empty");
  job = ValidJob();
  job.clear_handler();
  EXPECT_EQ(NormalizeJob(job, kCreated).status().message(), "job.handler: must not be empty");
  job = ValidJob();
  job.clear_schedule();
  EXPECT_EQ(NormalizeJob(job, kCreated).status().message(), "job.schedule: must be set");
  job = ValidJob();
  job.mutable_schedule()->clear_kind();
  job.mutable_schedule();
  EXPECT_THAT(std::string(NormalizeJob(job, kCreated).status().message()),
              StartsWith("job.schedule: "));
}

TEST(NormalizeJobTest, SelfChildRejected) {
  Job job = ValidJob();
  job.set_id(5);
  job.add_child_job_ids(5);
  EXPECT_EQ(NormalizeJob(job, kCreated).status().message(),
            "job.child_job_ids[0]: job 5 cannot be its own child");
}

TEST(NormalizeJobTest, ScriptJobNeedsNoHandler) {
  Job job = ValidJob();
  job.clear_handler();
  job.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON);
  job.set_script_source("print('hi')");
  EXPECT_TRUE(NormalizeJob(job, kCreated).ok());
}

TEST(NormalizeJobTest, LimitsAreInclusive) {
  Job job = ValidJob();
  job.set_name(std::string(128, 'n'));
  job.set_app(std::string(64, 'a'));
  job.set_fail_retry_count(100);
  job.mutable_timeout()->set_seconds(7 * 24 * 3600);
  for (int i = 0; i < 20; ++i) job.add_alarm_contacts("ops@example.com");
  EXPECT_TRUE(NormalizeJob(job, kCreated).ok()) << NormalizeJob(job, kCreated).status();
  job.add_alarm_contacts("one@too.many");
  EXPECT_THAT(std::string(NormalizeJob(job, kCreated).status().message()),
              StartsWith("job.alarm_contacts: at most 20"));
}

TEST(NormalizeJobTest, NameLengthCountsCharactersNotBytes) {
  Job job = ValidJob();
  std::string name;
  for (int i = 0; i < 128; ++i) name += "\xE5\xA0\xB1";  // 報
  job.set_name(name);
  EXPECT_TRUE(NormalizeJob(job, kCreated).ok());
}

ChildGraph Graph(std::initializer_list<int64_t> existing,
                 std::initializer_list<std::pair<int64_t, std::vector<int64_t>>> edges) {
  ChildGraph g;
  for (int64_t id : existing) g.existing.insert(id);
  for (const auto& [id, children] : edges) g.children[id] = children;
  return g;
}

TEST(CheckChildGraphTest, MissingChildNamed) {
  Job job = ValidJob();
  job.add_child_job_ids(4);
  job.add_child_job_ids(8);
  EXPECT_EQ(CheckChildGraph(0, job, Graph({4}, {})).message(),
            "job.child_job_ids[1]: job 8 does not exist");
}

TEST(CheckChildGraphTest, DirectCycle) {
  Job job = ValidJob();
  job.add_child_job_ids(5);
  auto s = CheckChildGraph(3, job, Graph({5}, {{5, {3}}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "job.child_job_ids: cycle 3 \xE2\x86\x92 5 \xE2\x86\x92 3");
}

TEST(CheckChildGraphTest, LongCycleReportsPathInOrder) {
  Job job = ValidJob();
  job.add_child_job_ids(10);
  job.add_child_job_ids(20);
  // 1 → 20 → 21 → 22 → 1 (and a dead-end branch through 10).
  auto s =
      CheckChildGraph(1, job, Graph({10, 20}, {{10, {11}}, {20, {21}}, {21, {22}}, {22, {1}}}));
  EXPECT_EQ(s.message(),
            "job.child_job_ids: cycle 1 \xE2\x86\x92 20 \xE2\x86\x92 21 \xE2\x86\x92 22 "
            "\xE2\x86\x92 1");
}

TEST(CheckChildGraphTest, StoredEdgesOfSelfAreReplaced) {
  // Job 1 used to have child 2, and 2 → 3. Setting 1's children to {3} closes no cycle even
  // though the stored graph still lists 1 → 2.
  Job job = ValidJob();
  job.add_child_job_ids(3);
  EXPECT_TRUE(CheckChildGraph(1, job, Graph({3}, {{1, {2}}, {2, {3}}})).ok());
}

TEST(CheckChildGraphTest, DiamondAndUnrelatedCycleAreFine) {
  Job job = ValidJob();
  job.add_child_job_ids(2);
  job.add_child_job_ids(3);
  // 2 → 4, 3 → 4 (diamond); 7 ↔ 8 is a cycle not through job 1 (not its business).
  EXPECT_TRUE(
      CheckChildGraph(1, job, Graph({2, 3}, {{2, {4}}, {3, {4}}, {7, {8}}, {8, {7}}})).ok());
}

TEST(CheckChildGraphTest, NewJobCannotCloseACycle) {
  Job job = ValidJob();
  job.add_child_job_ids(2);
  EXPECT_TRUE(CheckChildGraph(0, job, Graph({2}, {{2, {2}}})).ok());
}

TEST(ApplyUpdateMaskTest, OnlyMaskedFieldsChange) {
  Job current = ValidJob();
  current.set_id(7);
  current.set_param("old");
  current.add_alarm_contacts("a@x");
  current.add_alarm_contacts("b@x");
  current.set_script_version(3);
  Job patch;
  patch.set_param("new");
  patch.set_name("ignored because not in mask");
  patch.add_alarm_contacts("c@x");
  patch.set_enabled(false);
  google::protobuf::FieldMask mask;
  mask.add_paths("param");
  mask.add_paths("alarm_contacts");
  mask.add_paths("enabled");
  auto merged = ApplyUpdateMask(current, patch, mask);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->id(), 7);
  EXPECT_EQ(merged->param(), "new");
  EXPECT_EQ(merged->name(), "nightly report");
  ASSERT_EQ(merged->alarm_contacts_size(), 1);  // Repeated fields are replaced, not appended.
  EXPECT_EQ(merged->alarm_contacts(0), "c@x");
  EXPECT_FALSE(merged->enabled());
  EXPECT_EQ(merged->script_version(), 3);
}

TEST(ApplyUpdateMaskTest, MaskedMessageFieldIsReplacedWhole) {
  Job current = ValidJob();
  Job patch;
  patch.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(60);
  google::protobuf::FieldMask mask;
  mask.add_paths("schedule");
  auto merged = ApplyUpdateMask(current, patch, mask);
  ASSERT_TRUE(merged.ok());
  EXPECT_FALSE(merged->schedule().has_cron());
  EXPECT_EQ(merged->schedule().fix_rate().interval_seconds(), 60);
}

TEST(ApplyUpdateMaskTest, EmptyMaskReplacesAllWritableFields) {
  Job current = ValidJob();
  current.set_id(7);
  current.set_description("old description");
  current.set_script_version(2);
  *current.mutable_create_time() = ToProto(absl::FromUnixSeconds(100));
  Job patch = ValidJob();
  patch.set_id(12345);  // Output only: ignored.
  patch.set_name("renamed");
  auto merged = ApplyUpdateMask(current, patch, google::protobuf::FieldMask());
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->id(), 7);
  EXPECT_EQ(merged->name(), "renamed");
  EXPECT_EQ(merged->description(), "");
  EXPECT_EQ(merged->script_version(), 2);
  EXPECT_EQ(merged->create_time().seconds(), 100);
}

TEST(ApplyUpdateMaskTest, UnknownAndOutputOnlyPathsNamed) {
  google::protobuf::FieldMask mask;
  mask.add_paths("param");
  mask.add_paths("enabled");
  mask.add_paths("x");
  EXPECT_EQ(ApplyUpdateMask(Job(), Job(), mask).status().message(),
            "update_mask.paths[2]: unknown field \"x\"");
  mask.Clear();
  mask.add_paths("schedule.cron");
  EXPECT_EQ(ApplyUpdateMask(Job(), Job(), mask).status().message(),
            "update_mask.paths[0]: unknown field \"schedule.cron\"");
  mask.Clear();
  mask.add_paths("next_fire_time");
  EXPECT_EQ(ApplyUpdateMask(Job(), Job(), mask).status().message(),
            "update_mask.paths[0]: field \"next_fire_time\" is output only");
}

TEST(PagingTest, PageSize) {
  EXPECT_EQ(*ValidatePageSize(0), 50);
  EXPECT_EQ(*ValidatePageSize(500), 500);
  EXPECT_EQ(ValidatePageSize(501).status().message(),
            "page_size: must be between 0 and 500, got 501");
  EXPECT_EQ(ValidatePageSize(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PagingTest, TokenRoundTripAndGarbage) {
  EXPECT_EQ(*DecodePageToken(""), 0);
  EXPECT_EQ(*DecodePageToken(EncodePageToken(123456789012)), 123456789012);
  for (const char* bad : {"123", "!!!", "YWZ0ZXI6", "YWZ0ZXI6LTE", "Zm9vOjE"}) {
    auto s = DecodePageToken(bad);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.status().message()), StartsWith("page_token: ")) << bad;
  }
}

TEST(ShardParamTest, ParsesAndRejects) {
  auto empty = ParseShardParam("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->total, 0);
  auto ok = ParseShardParam("2/5");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->index, 2);
  EXPECT_EQ(ok->total, 5);
  EXPECT_TRUE(ParseShardParam("999/1000").ok());
  for (const char* bad : {"5/5", "-1/3", "1/0", "0/1001", "1", "a/b", "1/2/3", "1 /2"}) {
    auto s = ParseShardParam(bad);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.status().message()), StartsWith("shard_param: ")) << bad;
  }
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
