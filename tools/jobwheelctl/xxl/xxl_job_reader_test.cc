#include "tools/jobwheelctl/xxl/xxl_job_reader.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::ctl::xxl {
namespace {

// Expects `text` to be refused with a message containing `want`.
void ExpectError(const std::string& text, const std::string& want) {
  auto jobs = ReadXxlJobs(text);
  ASSERT_FALSE(jobs.ok()) << text;
  EXPECT_EQ(jobs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(jobs.status().message(), want))
      << "want \"" << want << "\" in " << jobs.status();
}

TEST(XxlJobReaderTest, PageListJson) {
  auto jobs = ReadXxlJobs(R"({"recordsTotal": 2, "recordsFiltered": 2, "data": [
    {"id": 7, "jobGroup": 2, "jobDesc": "nightly report", "addTime": "2024-01-01 00:00:00",
     "author": "ops", "alarmEmail": "a@x.io,b@x.io", "scheduleType": "CRON",
     "scheduleConf": "0 0 2 * * ?", "misfireStrategy": "FIRE_ONCE_NOW",
     "executorRouteStrategy": "ROUND", "executorHandler": "report", "executorParam": "full",
     "executorBlockStrategy": "DISCARD_LATER", "executorTimeout": 30,
     "executorFailRetryCount": 2, "glueType": "BEAN", "glueSource": null, "glueRemark": "",
     "glueUpdatetime": 1700000000000, "childJobId": "8, 9", "triggerStatus": 1,
     "triggerLastTime": 0, "triggerNextTime": 0, "someFutureField": {"x": 1}},
    {"id": "8", "jobGroup": 2, "scheduleType": "NONE", "executorTimeout": "0",
     "childJobId": "", "triggerStatus": 0}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  const XxlJob& j = (*jobs)[0];
  EXPECT_EQ(j.id, 7);
  EXPECT_EQ(j.job_group, 2);
  EXPECT_EQ(j.job_desc, "nightly report");
  EXPECT_EQ(j.author, "ops");
  EXPECT_EQ(j.alarm_email, "a@x.io,b@x.io");
  EXPECT_EQ(j.schedule_type, "CRON");
  EXPECT_EQ(j.schedule_conf, "0 0 2 * * ?");
  EXPECT_EQ(j.misfire_strategy, "FIRE_ONCE_NOW");
  EXPECT_EQ(j.executor_route_strategy, "ROUND");
  EXPECT_EQ(j.executor_handler, "report");
  EXPECT_EQ(j.executor_param, "full");
  EXPECT_EQ(j.executor_block_strategy, "DISCARD_LATER");
  EXPECT_EQ(j.executor_timeout, 30);
  EXPECT_EQ(j.executor_fail_retry_count, 2);
  EXPECT_EQ(j.glue_type, "BEAN");
  EXPECT_EQ(j.glue_source, "");
  EXPECT_EQ(j.child_job_ids, (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(j.trigger_status, 1);
  EXPECT_EQ(j.where, "data[0]");
  EXPECT_EQ((*jobs)[1].id, 8);  // Quoted numbers are numbers too.
  EXPECT_TRUE((*jobs)[1].child_job_ids.empty());
}

TEST(XxlJobReaderTest, EnvelopesAndBareArrays) {
  for (const std::string text : {
           R"([{"id": 1, "jobGroup": 1}])",
           R"({"code": 200, "data": {"recordsTotal": 1, "data": [{"id": 1, "jobGroup": 1}]}})",
           R"({"code": 200, "content": {"data": [{"id": 1, "job_group": 1}]}})",
       }) {
    auto jobs = ReadXxlJobs(text);
    ASSERT_TRUE(jobs.ok()) << text << ": " << jobs.status();
    ASSERT_EQ(jobs->size(), 1u) << text;
    EXPECT_EQ((*jobs)[0].job_group, 1) << text;
  }
}

TEST(XxlJobReaderTest, TsvExport) {
  const std::string tsv =
      "id\tjob_group\tjob_desc\tschedule_type\tschedule_conf\texecutor_handler\t"
      "executor_timeout\tglue_type\tglue_source\tchild_jobid\ttrigger_status\tapp_name\t"
      "add_time\r\n"
      "3\t1\tshell job\tFIX_RATE\t60\t\t0\tGLUE_SHELL\techo a\\tb\\nexit 0\\\\\t4,5\t1\tdemo\t"
      "2024-01-01 00:00:00\r\n"
      "4\t1\tNULL\tNONE\tNULL\tchild\tNULL\tBEAN\tNULL\t\t0\tdemo\tNULL\n"
      "\n";
  auto jobs = ReadXxlJobs(tsv);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  const XxlJob& j = (*jobs)[0];
  EXPECT_EQ(j.id, 3);
  EXPECT_EQ(j.app_name, "demo");
  EXPECT_EQ(j.schedule_type, "FIX_RATE");
  EXPECT_EQ(j.schedule_conf, "60");
  EXPECT_EQ(j.glue_source, "echo a\tb\nexit 0\\");
  EXPECT_EQ(j.child_job_ids, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(j.trigger_status, 1);
  EXPECT_EQ(j.where, "line 2");
  EXPECT_EQ((*jobs)[1].job_desc, "");  // NULL
  EXPECT_EQ((*jobs)[1].executor_timeout, 0);
  EXPECT_EQ((*jobs)[1].executor_handler, "child");
}

TEST(XxlJobReaderTest, LegacyCronColumn) {
  auto jobs = ReadXxlJobs("id\tjob_group\tjob_cron\n5\t1\t0 * * * * ?\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ((*jobs)[0].job_cron, "0 * * * * ?");
}

TEST(XxlJobReaderTest, BadInput) {
  ExpectError("{\"data\": [", "not valid JSON");
  ExpectError(R"({"recordsTotal": 0})", "not an XXL-JOB job list");
  ExpectError(R"({"data": [1]})", "data[0]: not an object");
  ExpectError(R"({"data": [{"id": 1, "jobGroup": 1, "executorTimeout": "ten"}]})",
              "data[0]: executor_timeout: not a whole number: \"ten\"");
  ExpectError(R"({"data": [{"id": 1, "jobGroup": 1, "jobDesc": {"a": 1}}]})",
              "data[0]: jobDesc: expected a string or a number");
  ExpectError(R"({"data": [{"id": 1, "jobGroup": 1, "childJobId": "2,x"}]})",
              "child_jobid: not a comma list of job ids");
  ExpectError(R"({"data": [{"jobGroup": 1}]})", "data[0]: id: missing");
  ExpectError(R"({"data": [{"id": 1}]})", "job 1: job_group: missing");
  ExpectError(R"({"data": [{"id": 1, "jobGroup": 1}, {"id": 1, "jobGroup": 2}]})",
              "data[1]: id 1 appears twice (also data[0])");
  ExpectError("id\tjob_group\tcolour\n1\t1\tred\n", "line 1: unknown column \"colour\"");
  ExpectError("id\tjob_group\tid\n", "column \"id\" twice");
  ExpectError("id\tjob_group\n1\t1\t3\n", "line 2: 3 fields, the header has 2");
  ExpectError("id\tjob_group\tjob_desc\n1\t1\t\xC3\x28\n", "line 2: job_desc: not UTF-8");
  ExpectError("", "empty file");
}

}  // namespace
}  // namespace jobwheel::ctl::xxl
