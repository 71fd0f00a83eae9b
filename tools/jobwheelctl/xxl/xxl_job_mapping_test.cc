#include "tools/jobwheelctl/xxl/xxl_job_mapping.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::ctl::xxl {
namespace {

XxlJob Bean(int64_t id) {
  XxlJob j;
  j.id = id;
  j.job_group = 1;
  j.job_desc = "report";
  j.executor_handler = "report";
  j.glue_type = "BEAN";
  j.schedule_type = "NONE";
  return j;
}

MappedJob Map(const XxlJob& j, const std::string& time_zone = "") {
  MappingOptions options;
  options.time_zone = time_zone;
  return MapXxlJob(j, "demo", options);
}

void ExpectSkip(const XxlJob& j, const std::string& want) {
  MappedJob m = Map(j);
  EXPECT_TRUE(absl::StrContains(m.skip, want))
      << "want \"" << want << "\", got \"" << m.skip << "\"";
}

TEST(XxlJobMappingTest, EveryField) {
  XxlJob j = Bean(7);
  j.job_desc = "nightly report";
  j.author = " ops ";
  j.alarm_email = "a@x.io, b@x.io,";
  j.schedule_type = "CRON";
  j.schedule_conf = "0 0 2 * * ?";
  j.misfire_strategy = "FIRE_ONCE_NOW";
  j.executor_route_strategy = "ROUND";
  j.executor_param = "full";
  j.executor_block_strategy = "COVER_EARLY";
  j.executor_timeout = 30;
  j.executor_fail_retry_count = 2;
  j.child_job_ids = {8, 9, 8, 7};
  j.trigger_status = 1;
  MappedJob m = Map(j, "Asia/Shanghai");
  EXPECT_EQ(m.skip, "");
  EXPECT_EQ(m.xxl_id, 7);
  const v1::Job& job = m.job;
  EXPECT_EQ(job.app(), "demo");
  EXPECT_EQ(job.name(), "xxl-7-nightly report");
  EXPECT_EQ(job.description(), "nightly report");
  EXPECT_EQ(job.owner(), "ops");
  ASSERT_EQ(job.alarm_contacts_size(), 2);
  EXPECT_EQ(job.alarm_contacts(1), "b@x.io");
  EXPECT_EQ(job.schedule().cron().expression(), "0 0 2 * * ?");
  EXPECT_EQ(job.schedule().cron().time_zone(), "Asia/Shanghai");
  EXPECT_EQ(job.misfire_strategy(), v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  EXPECT_EQ(job.routing_strategy(), v1::ROUTING_STRATEGY_ROUND);
  EXPECT_EQ(job.block_strategy(), v1::BLOCK_STRATEGY_COVER_EARLY);
  EXPECT_EQ(job.glue_type(), v1::GLUE_TYPE_HANDLER);
  EXPECT_EQ(job.handler(), "report");
  EXPECT_EQ(job.param(), "full");
  EXPECT_EQ(job.timeout().seconds(), 30);
  EXPECT_EQ(job.fail_retry_count(), 2);
  EXPECT_TRUE(job.enabled());
  EXPECT_EQ(job.child_job_ids_size(), 0);  // Set once the children exist.
  EXPECT_EQ(job.labels().at("imported-from"), "xxl-job");
  EXPECT_EQ(job.labels().at("xxl-job-id"), "7");
  EXPECT_EQ(ImportedXxlId(job), 7);
  // Duplicates and the job itself dropped, the latter with a note.
  EXPECT_EQ(m.xxl_children, (std::vector<int64_t>{8, 9}));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_TRUE(absl::StrContains(m.notes[0], "child job 7 is the job itself")) << m.notes[0];
}

TEST(XxlJobMappingTest, ScheduleTypes) {
  XxlJob j = Bean(1);
  j.schedule_type = "NONE";
  EXPECT_TRUE(Map(j).job.schedule().has_none());
  j.schedule_type = "";
  EXPECT_TRUE(Map(j).job.schedule().has_none());

  j.schedule_type = "CRON";
  j.schedule_conf = "*/5 * * * * ?";
  MappedJob cron = Map(j);
  EXPECT_EQ(cron.job.schedule().cron().expression(), "*/5 * * * * ?");
  EXPECT_EQ(cron.job.schedule().cron().time_zone(), "");  // The scheduler's UTC.
  ASSERT_EQ(cron.notes.size(), 1u);
  EXPECT_TRUE(absl::StrContains(cron.notes[0], "--time_zone"));

  j.schedule_type = "fix_rate";
  j.schedule_conf = " 60 ";
  EXPECT_EQ(Map(j).job.schedule().fix_rate().interval_seconds(), 60);

  XxlJob legacy = Bean(2);
  legacy.schedule_type = "";
  legacy.job_cron = "0 0 * * * ?";
  EXPECT_EQ(Map(legacy).job.schedule().cron().expression(), "0 0 * * * ?");

  j.schedule_type = "FIX_DELAY";
  j.schedule_conf = "30";
  MappedJob delay = Map(j);
  EXPECT_EQ(delay.skip, "");
  EXPECT_EQ(delay.job.schedule().fix_delay().delay().seconds(), 30);
  j.schedule_conf = "0";
  ExpectSkip(j, "FIX_DELAY needs a whole number of seconds from 1 to 31622400");
  j.schedule_type = "FIX_RATE";
  j.schedule_conf = "0";
  ExpectSkip(j, "FIX_RATE needs a whole number of seconds above 0");
  j.schedule_conf = "1m";
  ExpectSkip(j, "schedule_conf \"1m\"");
  j.schedule_type = "CRON";
  j.schedule_conf = "";
  ExpectSkip(j, "schedule_conf: empty for schedule_type CRON");
  j.schedule_type = "WEEKLY";
  ExpectSkip(j, "schedule_type \"WEEKLY\": unknown");
}

TEST(XxlJobMappingTest, EveryRoutingStrategy) {
  const std::pair<const char*, v1::RoutingStrategy> cases[] = {
      {"FIRST", v1::ROUTING_STRATEGY_FIRST},
      {"LAST", v1::ROUTING_STRATEGY_LAST},
      {"ROUND", v1::ROUTING_STRATEGY_ROUND},
      {"RANDOM", v1::ROUTING_STRATEGY_RANDOM},
      {"CONSISTENT_HASH", v1::ROUTING_STRATEGY_CONSISTENT_HASH},
      {"LEAST_FREQUENTLY_USED", v1::ROUTING_STRATEGY_LEAST_FREQUENTLY_USED},
      {"LEAST_RECENTLY_USED", v1::ROUTING_STRATEGY_LEAST_RECENTLY_USED},
      {"FAILOVER", v1::ROUTING_STRATEGY_FAILOVER},
      {"BUSYOVER", v1::ROUTING_STRATEGY_BUSYOVER},
      {"SHARDING_BROADCAST", v1::ROUTING_STRATEGY_SHARDING_BROADCAST},
      {"", v1::ROUTING_STRATEGY_FIRST},
  };
  for (const auto& [xxl, want] : cases) {
    XxlJob j = Bean(1);
    j.executor_route_strategy = xxl;
    MappedJob m = Map(j);
    EXPECT_EQ(m.skip, "") << xxl;
    EXPECT_EQ(m.job.routing_strategy(), want) << xxl;
  }
  XxlJob j = Bean(1);
  j.executor_route_strategy = "UNSPECIFIED";
  ExpectSkip(j, "executor_route_strategy \"UNSPECIFIED\": unknown");
  j.executor_route_strategy = "NEAREST";
  ExpectSkip(j, "executor_route_strategy \"NEAREST\": unknown");
}

TEST(XxlJobMappingTest, BlockAndMisfireStrategies) {
  const std::pair<const char*, v1::BlockStrategy> blocks[] = {
      {"SERIAL_EXECUTION", v1::BLOCK_STRATEGY_SERIAL_EXECUTION},
      {"DISCARD_LATER", v1::BLOCK_STRATEGY_DISCARD_LATER},
      {"COVER_EARLY", v1::BLOCK_STRATEGY_COVER_EARLY},
      {"", v1::BLOCK_STRATEGY_SERIAL_EXECUTION},
  };
  for (const auto& [xxl, want] : blocks) {
    XxlJob j = Bean(1);
    j.executor_block_strategy = xxl;
    EXPECT_EQ(Map(j).job.block_strategy(), want) << xxl;
  }
  const std::pair<const char*, v1::MisfireStrategy> misfires[] = {
      {"DO_NOTHING", v1::MISFIRE_STRATEGY_DO_NOTHING},
      {"FIRE_ONCE_NOW", v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW},
      {"", v1::MISFIRE_STRATEGY_DO_NOTHING},
  };
  for (const auto& [xxl, want] : misfires) {
    XxlJob j = Bean(1);
    j.misfire_strategy = xxl;
    EXPECT_EQ(Map(j).job.misfire_strategy(), want) << xxl;
  }
  XxlJob j = Bean(1);
  j.executor_block_strategy = "QUEUE";
  ExpectSkip(j, "executor_block_strategy \"QUEUE\": unknown");
  j = Bean(1);
  j.misfire_strategy = "FIRE_TWICE";
  ExpectSkip(j, "misfire_strategy \"FIRE_TWICE\": unknown");
}

TEST(XxlJobMappingTest, GlueTypes) {
  XxlJob shell = Bean(1);
  shell.glue_type = "GLUE_SHELL";
  shell.executor_handler = "";
  shell.glue_source = "#!/bin/sh\necho hi\n";
  shell.glue_remark = "v2";
  MappedJob m = Map(shell);
  EXPECT_EQ(m.skip, "");
  EXPECT_EQ(m.job.glue_type(), v1::GLUE_TYPE_SCRIPT_SHELL);
  EXPECT_EQ(m.job.script_source(), shell.glue_source);
  EXPECT_EQ(m.job.handler(), "");
  EXPECT_EQ(m.notes.size(), 2u);  // Executors must allow scripts; the remark is not kept.

  XxlJob python = shell;
  python.glue_type = "GLUE_PYTHON";
  m = Map(python);
  EXPECT_EQ(m.job.glue_type(), v1::GLUE_TYPE_SCRIPT_PYTHON);
  EXPECT_TRUE(absl::StrContains(m.notes[0], "python3")) << m.notes[0];

  // XXL-JOB passed the param and shard as $1 $2 $3; jobwheel passes them in the environment.
  for (const char* source :
       {"echo \"$1\"\n", "echo ${2:-0}\n", "import sys\nprint(sys.argv[1])\n"}) {
    XxlJob reads = shell;
    reads.glue_source = source;
    m = Map(reads);
    ASSERT_EQ(m.notes.size(), 3u) << source;
    EXPECT_TRUE(absl::StrContains(m.notes[1], "$JOBWHEEL_PARAM")) << m.notes[1];
  }

  for (const char* glue :
       {"GLUE_GROOVY", "GLUE_PYTHON2", "GLUE_PHP", "GLUE_NODEJS", "GLUE_POWERSHELL"}) {
    XxlJob j = shell;
    j.glue_type = glue;
    ExpectSkip(j, std::string("glue_type ") + glue + ": jobwheel runs handlers and shell");
  }
  XxlJob odd = shell;
  odd.glue_type = "GLUE_COBOL";
  ExpectSkip(odd, "glue_type \"GLUE_COBOL\": unknown");
  XxlJob empty = shell;
  empty.glue_source = "";
  ExpectSkip(empty, "glue_source: empty for GLUE_SHELL");
  XxlJob no_handler = Bean(1);
  no_handler.executor_handler = " ";
  ExpectSkip(no_handler, "executor_handler: empty");
}

TEST(XxlJobMappingTest, LimitsAndEnabled) {
  XxlJob j = Bean(1);
  j.trigger_status = 0;
  EXPECT_FALSE(Map(j).job.enabled());
  j.executor_timeout = 0;
  EXPECT_FALSE(Map(j).job.has_timeout());
  j.executor_timeout = -1;
  ExpectSkip(j, "executor_timeout -1");
  j.executor_timeout = 7 * 24 * 3600 + 1;
  ExpectSkip(j, "executor_timeout 604801");
  j = Bean(1);
  j.executor_fail_retry_count = 101;
  ExpectSkip(j, "executor_fail_retry_count 101");
}

TEST(XxlJobMappingTest, NamesAndImportedIds) {
  EXPECT_EQ(ImportedName(3, ""), "xxl-3");
  EXPECT_EQ(ImportedName(3, " a\tb\n "), "xxl-3-a b");
  std::string long_desc;
  for (int i = 0; i < 200; ++i) long_desc += "\xE5\xA0\xB1";  // 報
  const std::string cut = ImportedName(12, long_desc);
  EXPECT_EQ(cut.size(), 7 + 3 * 121u);  // "xxl-12-" and 121 characters: 128 in all.
  EXPECT_EQ(ImportedXxlId("xxl-3"), 3);
  EXPECT_EQ(ImportedXxlId("xxl-42-nightly report"), 42);
  EXPECT_EQ(ImportedXxlId(cut), 12);
  EXPECT_EQ(ImportedXxlId("xxl-"), std::nullopt);
  EXPECT_EQ(ImportedXxlId("xxl-4x"), std::nullopt);
  EXPECT_EQ(ImportedXxlId("xxl-0"), std::nullopt);
  EXPECT_EQ(ImportedXxlId("nightly xxl-4"), std::nullopt);

  // A job: its label first, then its name.
  v1::Job job;
  job.set_name("renamed by hand");
  EXPECT_EQ(ImportedXxlId(job), std::nullopt);
  (*job.mutable_labels())["xxl-job-id"] = "9";
  EXPECT_EQ(ImportedXxlId(job), 9);
  (*job.mutable_labels())["xxl-job-id"] = "x";
  job.set_name("xxl-5-old import");
  EXPECT_EQ(ImportedXxlId(job), 5);
}

TEST(XxlJobMappingTest, Apps) {
  MappingOptions options;
  auto map = ParseAppMap(" 1=demo, 2 = billing ");
  ASSERT_TRUE(map.ok()) << map.status();
  options.app_map = *map;
  XxlJob j = Bean(1);
  EXPECT_EQ(*AppFor(j, options), "demo");
  j.job_group = 3;
  j.app_name = "from-export";
  EXPECT_EQ(*AppFor(j, options), "from-export");
  j.job_group = 2;
  EXPECT_EQ(*AppFor(j, options), "billing");  // The flag wins.
  j.job_group = 4;
  j.app_name = "";
  auto missing = AppFor(j, options);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "job_group 4 has no app"))
      << missing.status();
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "--app_map=4="));

  for (const char* bad : {"1", "x=demo", "0=demo", "1=", "1=a,1=b"}) {
    EXPECT_FALSE(ParseAppMap(bad).ok()) << bad;
  }
  EXPECT_TRUE(ParseAppMap("")->empty());
}

}  // namespace
}  // namespace jobwheel::ctl::xxl
