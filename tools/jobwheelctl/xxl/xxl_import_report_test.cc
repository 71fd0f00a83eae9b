#include "tools/jobwheelctl/xxl/xxl_import_report.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace jobwheel::ctl::xxl {
namespace {

TEST(XxlImportReportTest, Tokens) {
  EXPECT_EQ(Token("demo"), "demo");
  EXPECT_EQ(Token(""), "\"\"");
  EXPECT_EQ(Token("a b"), "\"a b\"");
  EXPECT_EQ(Token("k=v"), "\"k=v\"");
  EXPECT_EQ(Token("say \"hi\"\n"), "\"say \\\"hi\\\"\\n\"");
}

TEST(XxlImportReportTest, OneLinePerJob) {
  XxlJob j;
  j.id = 7;
  j.job_group = 1;
  j.job_desc = "nightly report";
  j.schedule_type = "CRON";
  j.schedule_conf = "0 0 2 * * ?";
  j.executor_route_strategy = "SHARDING_BROADCAST";
  j.executor_handler = "report";
  j.executor_timeout = 30;
  j.executor_fail_retry_count = 2;
  j.child_job_ids = {8, 9};
  j.trigger_status = 1;
  MappingOptions options;
  options.time_zone = "Asia/Shanghai";
  PlannedJob p{MapXxlJob(j, "demo", options)};
  EXPECT_EQ(PlanLine(p),
            "xxl_job=7 action=create app=demo name=\"xxl-7-nightly report\" "
            "schedule=\"cron:0 0 2 * * ? (Asia/Shanghai)\" misfire=DO_NOTHING "
            "routing=SHARDING_BROADCAST block=SERIAL_EXECUTION glue=HANDLER handler=report "
            "param=\"\" timeout=30s retries=2 enabled=true children=8,9");
  EXPECT_TRUE(PlanDetails(p).empty());
  p.next_fire = absl::FromUnixSeconds(1700000000);
  EXPECT_TRUE(absl::EndsWith(PlanLine(p), " children=8,9 next=\"2023-11-14 22:13:20\""))
      << PlanLine(p);

  p.action = ImportAction::kExists;
  p.existing.set_id(17);
  p.differs = {"param"};
  EXPECT_EQ(PlanLine(p).substr(0, 35), "xxl_job=7 action=exists job=17 app=");
  EXPECT_EQ(PlanDetails(p),
            (std::vector<std::string>{"  differs: param (job 17 is left as it is)"}));

  p.action = ImportAction::kSkip;
  p.mapped.skip = "glue_type GLUE_GROOVY: no";
  EXPECT_EQ(PlanLine(p), "xxl_job=7 action=skip app=demo name=\"xxl-7-nightly report\"");
  EXPECT_EQ(PlanDetails(p)[0], "  cannot map: glue_type GLUE_GROOVY: no");
}

}  // namespace
}  // namespace jobwheel::ctl::xxl
