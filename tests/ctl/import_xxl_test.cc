// `jobwheelctl import xxl-job` as a real process against a real stack: the sample export
// (testdata/xxl_job_pagelist.json: every XXL schedule type, every routing strategy, a child
// chain 1 -> 2 -> 3, a Groovy job and a cron the scheduler refuses) is listed by a dry run
// that writes nothing; --apply creates each mappable job once with every field mapped and the
// child links on the new ids; a second --apply changes nothing. Bad input exits non-zero with a
// message. The jobs are counted through ListJobs.
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/testing/command.h"
#include "common/testing/process.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "tests/ctl/ctl_stack_test.h"

namespace jobwheel::e2e {
namespace {

using ::jobwheel::testing::CommandResult;
using testing::Ctx;
using testing::WriteFile;

constexpr char kAppMap[] = "--app_map=1=demo,2=demo";

// The `key=value` pairs of the plan line of XXL job `xxl_id` (empty when there is none).
std::map<std::string, std::string> PlanLine(const std::string& out, int64_t xxl_id) {
  std::map<std::string, std::string> kv;
  const std::string prefix = absl::StrCat("xxl_job=", xxl_id, " ");
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (!absl::StartsWith(line, prefix)) continue;
    // Values with spaces are quoted: split on spaces outside quotes.
    std::string key, value;
    bool in_value = false, quoted = false;
    auto flush = [&] {
      if (!key.empty()) kv[key] = value;
      key.clear();
      value.clear();
      in_value = false;
    };
    for (char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ' ' && !quoted) {
        flush();
      } else if (c == '=' && !in_value && !quoted) {
        in_value = true;
      } else {
        (in_value ? value : key) += c;
      }
    }
    flush();
  }
  return kv;
}

class ImportXxlTest : public CtlStackTest {
 protected:
  static std::string Sample(const std::string& name) {
    return ::jobwheel::testing::RunfilePath("tests/ctl/testdata/" + name);
  }

  // Every job, through ListJobs.
  std::vector<v1::Job> AllJobs() {
    v1::ListJobsRequest req;
    req.set_page_size(500);
    v1::ListJobsResponse resp;
    grpc::Status s = admin_->ListJobs(Ctx(stack_->admin_token()).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.jobs().begin(), resp.jobs().end()};
  }

  // The jobs by the XXL id in their name.
  std::map<int64_t, v1::Job> ByXxlId() {
    std::map<int64_t, v1::Job> by_id;
    for (const v1::Job& j : AllJobs()) {
      std::vector<std::string> parts = absl::StrSplit(j.name(), '-');
      int64_t id = 0;
      if (parts.size() >= 2 && parts[0] == "xxl" && absl::SimpleAtoi(parts[1], &id)) {
        EXPECT_EQ(by_id.count(id), 0u) << "xxl job " << id << " imported twice";
        by_id[id] = j;
      }
    }
    return by_id;
  }
};

TEST_F(ImportXxlTest, DryRunThenApplyTwice) {
  const std::string sample = Sample("xxl_job_pagelist.json");

  // Without an app for each group: refused, naming the group, nothing written.
  CommandResult r = Ctl({"import", "xxl-job", sample, "--app_map=1=demo"});
  EXPECT_EQ(r.exit_code, 2) << Show(r);
  EXPECT_TRUE(absl::StrContains(r.err, "no jobwheel app for job_group 2 (xxl jobs 5, 6, 7, 8"))
      << Show(r);
  EXPECT_TRUE(absl::StrContains(r.err, "--app_map=2=<app>")) << Show(r);

  // Dry run: every job and its mapping, what cannot be mapped and why; nothing written.
  r = Ctl({"import", "xxl-job", sample, kAppMap});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  std::cout << "--- dry run\n" << r.out;  // In the test log, as an example of the output.
  const std::map<int64_t, std::string> routing = {{1, "FIRST"},
                                                  {2, "LAST"},
                                                  {3, "ROUND"},
                                                  {4, "RANDOM"},
                                                  {5, "CONSISTENT_HASH"},
                                                  {6, "LEAST_FREQUENTLY_USED"},
                                                  {7, "LEAST_RECENTLY_USED"},
                                                  {8, "FAILOVER"},
                                                  {9, "BUSYOVER"},
                                                  {10, "SHARDING_BROADCAST"},
                                                  {11, "FIRST"},
                                                  {13, "FIRST"},
                                                  {14, "FIRST"}};
  for (const auto& [id, strategy] : routing) {
    auto kv = PlanLine(r.out, id);
    EXPECT_EQ(kv["action"], "create") << id << "\n" << r.out;
    EXPECT_EQ(kv["app"], "demo") << id;
    EXPECT_EQ(kv["routing"], strategy) << id;
  }
  auto one = PlanLine(r.out, 1);
  EXPECT_EQ(one["name"], "xxl-1-nightly report");
  EXPECT_EQ(one["schedule"], "cron:0 0 2 * * ? (UTC)");
  EXPECT_EQ(one["misfire"], "FIRE_ONCE_NOW");
  EXPECT_EQ(one["timeout"], "30s");
  EXPECT_EQ(one["retries"], "1");
  EXPECT_EQ(one["enabled"], "true");
  EXPECT_EQ(one["children"], "2");
  EXPECT_EQ(PlanLine(r.out, 2)["schedule"], "none");
  EXPECT_EQ(PlanLine(r.out, 2)["block"], "DISCARD_LATER");
  EXPECT_EQ(PlanLine(r.out, 3)["block"], "COVER_EARLY");
  EXPECT_EQ(PlanLine(r.out, 4)["schedule"], "fix_rate:3600s");
  EXPECT_EQ(PlanLine(r.out, 13)["glue"], "SCRIPT_SHELL");
  EXPECT_EQ(PlanLine(r.out, 14)["glue"], "SCRIPT_PYTHON");
  EXPECT_EQ(PlanLine(r.out, 11)["schedule"], "fix_delay:60s");
  EXPECT_EQ(PlanLine(r.out, 12)["action"], "skip");
  EXPECT_EQ(PlanLine(r.out, 15)["action"], "skip");
  EXPECT_TRUE(absl::StrContains(
      r.out, "cannot map: schedule.cron: cron expression \"0 0 25 * * ?\": field hour"))
      << r.out;
  EXPECT_TRUE(absl::EndsWith(one["next"], " 02:00:00")) << one["next"];
  EXPECT_TRUE(absl::StrContains(r.out, "cannot map: glue_type GLUE_GROOVY")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "child xxl job 12 is not imported")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "xxl job 1: children would be new (xxl job 2)")) << r.out;
  EXPECT_TRUE(absl::StrContains(
      r.out, "dry run: jobs=15 create=13 exists=0 skip=2 children=2; nothing written"))
      << r.out;
  EXPECT_TRUE(AllJobs().empty());

  // --apply: each mappable job once, every field mapped, children on the new ids.
  r = Ctl({"import", "xxl-job", sample, kAppMap, "--apply"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(
      absl::StrContains(r.out, "applied: jobs=15 created=13 exists=0 skip=2 children=2 failed=0"))
      << r.out;
  std::map<int64_t, v1::Job> jobs = ByXxlId();
  ASSERT_EQ(AllJobs().size(), 13u);
  ASSERT_EQ(jobs.size(), 13u);
  EXPECT_EQ(jobs.count(12), 0u);
  EXPECT_EQ(jobs.count(15), 0u);
  for (const auto& [id, strategy] : routing) {
    EXPECT_EQ(v1::RoutingStrategy_Name(jobs[id].routing_strategy()), "ROUTING_STRATEGY_" + strategy)
        << id;
  }
  const v1::Job& nightly = jobs[1];
  EXPECT_EQ(nightly.app(), "demo");
  EXPECT_EQ(nightly.description(), "nightly report");
  EXPECT_EQ(nightly.owner(), "ops");
  ASSERT_EQ(nightly.alarm_contacts_size(), 1);
  EXPECT_EQ(nightly.alarm_contacts(0), "ops@example.com");
  EXPECT_EQ(nightly.schedule().cron().expression(), "0 0 2 * * ?");
  EXPECT_EQ(nightly.misfire_strategy(), v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  EXPECT_EQ(nightly.handler(), "echo");
  EXPECT_EQ(nightly.param(), "report");
  EXPECT_EQ(nightly.timeout().seconds(), 30);
  EXPECT_EQ(nightly.fail_retry_count(), 1);
  EXPECT_TRUE(nightly.enabled());
  EXPECT_FALSE(jobs[2].enabled());
  EXPECT_EQ(jobs[4].schedule().fix_rate().interval_seconds(), 3600);
  EXPECT_EQ(jobs[4].block_strategy(), v1::BLOCK_STRATEGY_DISCARD_LATER);
  EXPECT_EQ(jobs[5].schedule().cron().expression(), "0 30 1 ? * MON-FRI");
  EXPECT_EQ(jobs[11].schedule().fix_delay().delay().seconds(), 60);
  EXPECT_EQ(jobs[13].glue_type(), v1::GLUE_TYPE_SCRIPT_SHELL);
  EXPECT_EQ(jobs[13].script_source(), "#!/bin/bash\necho \"shell glue\"\nexit 0\n");
  EXPECT_EQ(jobs[14].glue_type(), v1::GLUE_TYPE_SCRIPT_PYTHON);
  // The chain 1 -> 2 -> 3 on jobwheel's ids; 13's child (the Groovy job) dropped.
  EXPECT_EQ(std::vector<int64_t>(nightly.child_job_ids().begin(), nightly.child_job_ids().end()),
            std::vector<int64_t>{jobs[2].id()});
  EXPECT_EQ(std::vector<int64_t>(jobs[2].child_job_ids().begin(), jobs[2].child_job_ids().end()),
            std::vector<int64_t>{jobs[3].id()});
  EXPECT_EQ(jobs[3].child_job_ids_size(), 0);
  // Each carries its import labels: listed by them.
  EXPECT_EQ(nightly.labels().at("xxl-job-id"), "1");
  v1::ListJobsRequest by_label;
  by_label.set_label_selector("imported-from=xxl-job");
  by_label.set_page_size(500);
  v1::ListJobsResponse labelled;
  ASSERT_TRUE(admin_->ListJobs(Ctx(stack_->admin_token()).get(), by_label, &labelled).ok());
  EXPECT_EQ(labelled.jobs_size(), 13);
  EXPECT_EQ(jobs[13].child_job_ids_size(), 0);

  // --apply again: nothing created, nothing changed.
  r = Ctl({"import", "xxl-job", sample, kAppMap, "--apply"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(
      absl::StrContains(r.out, "applied: jobs=15 created=0 exists=13 skip=2 children=0 failed=0"))
      << r.out;
  EXPECT_FALSE(absl::StrContains(r.out, "differs:")) << r.out;
  EXPECT_EQ(PlanLine(r.out, 1)["job"], absl::StrCat(nightly.id()));
  std::map<int64_t, v1::Job> again = ByXxlId();
  ASSERT_EQ(AllJobs().size(), 13u);
  for (const auto& [id, job] : jobs) {
    EXPECT_EQ(again[id].id(), job.id()) << id;
    EXPECT_EQ(again[id].update_time().seconds(), job.update_time().seconds()) << id;
    EXPECT_EQ(again[id].update_time().nanos(), job.update_time().nanos()) << id;
  }
}

TEST_F(ImportXxlTest, TsvExportAndBadInput) {
  // The xxl_job_info export names its app in an app_name column: no --app_map needed.
  CommandResult r = Ctl({"import", "xxl-job", Sample("xxl_job_info.tsv")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  auto cron = PlanLine(r.out, 101);
  EXPECT_EQ(cron["schedule"], "cron:0 0/5 * * * ? (UTC)");
  EXPECT_EQ(cron["children"], "102");
  auto shell = PlanLine(r.out, 102);
  EXPECT_EQ(shell["schedule"], "fix_rate:120s");
  EXPECT_EQ(shell["misfire"], "FIRE_ONCE_NOW");
  EXPECT_EQ(shell["glue"], "SCRIPT_SHELL");
  EXPECT_EQ(shell["retries"], "2");
  r = Ctl(
      {"import", "xxl-job", Sample("xxl_job_info.tsv"), "--time_zone=Asia/Shanghai", "--apply"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  std::map<int64_t, v1::Job> jobs = ByXxlId();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[101].schedule().cron().time_zone(), "Asia/Shanghai");
  EXPECT_EQ(jobs[102].script_source(), "#!/bin/sh\necho \"tab\there\"\n");
  EXPECT_EQ(
      std::vector<int64_t>(jobs[101].child_job_ids().begin(), jobs[101].child_job_ids().end()),
      std::vector<int64_t>{jobs[102].id()});

  const std::string dir = stack_->dir();
  ExpectError(Ctl({"import", "xxl-job", dir + "/none.json"}), 2, "none.json: cannot read");
  ExpectError(Ctl({"import", "xxl-job", WriteFile(dir + "/bad.json", "{\"data\": [")}), 2,
              "not valid JSON");
  ExpectError(Ctl({"import", "xxl-job", WriteFile(dir + "/bad.tsv", "id\tjob_group\tcolour\n")}), 2,
              "unknown column \"colour\"");
  ExpectError(Ctl({"import", "xxl-job", Sample("xxl_job_info.tsv"), "--app_map=5"}), 2,
              "--app_map: \"5\" is not GROUPID=app");
  ExpectError(Ctl({"import", "xxl-job", Sample("xxl_job_info.tsv"), "--time_zone=Mars/Base"}), 2,
              "--time_zone: unknown zone");
  ExpectError(Ctl({"import", "xxl-job"}), 2, "import xxl-job: needs one FILE");
  ExpectError(Ctl({"import", "powerjob", "x"}), 2, "unknown command import powerjob");
  EXPECT_EQ(AllJobs().size(), 2u);
}

}  // namespace
}  // namespace jobwheel::e2e
