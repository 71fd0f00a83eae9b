#include "sdk/internal/script_environment.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwheel::sdk {
namespace {

using ::testing::ElementsAre;

TEST(ScriptEnvironmentTest, KeepsOnlyTheAllowListAndSetsTheWorkDirAndJobVars) {
  const char* parent[] = {"JOBWHEEL_CLUSTER_TOKEN_FILE=/etc/jobwheel/cluster",
                          "JOBWHEEL_EXECUTOR_TOKEN=jw_abc",
                          "AWS_SECRET_ACCESS_KEY=shh",
                          "PATHOLOGICAL=1",
                          "PATH=/opt/bin:/usr/bin",
                          "HOME=/root",
                          "LD_PRELOAD=/tmp/evil.so",
                          "TZ=Europe/Paris",
                          "LANG=C.UTF-8",
                          nullptr};
  EXPECT_THAT(ScriptEnvironment(parent, "/var/lib/x/work/run-7", {{"JOBWHEEL_RUN_ID", "7"}}),
              ElementsAre("PATH=/opt/bin:/usr/bin", "LANG=C.UTF-8", "TZ=Europe/Paris",
                          "HOME=/var/lib/x/work/run-7", "TMPDIR=/var/lib/x/work/run-7",
                          "PWD=/var/lib/x/work/run-7", "JOBWHEEL_RUN_ID=7"));
}

TEST(ScriptEnvironmentTest, DefaultPathWithoutAParentEnvironment) {
  EXPECT_THAT(ScriptEnvironment(nullptr, "", {}), ElementsAre("PATH=/usr/local/bin:/usr/bin:/bin"));
}

TEST(ScriptEnvironmentTest, JobVarsOfARun) {
  jobwheel::v1::RunRequest run;
  run.set_job_id(3);
  run.set_run_id(44);
  run.set_fire_id(9);
  run.set_shard_index(1);
  run.set_shard_total(4);
  run.set_attempt(2);
  run.set_param("secret-ish param");
  std::vector<std::string> env = ScriptEnvironment(nullptr, "", ScriptJobVars(run));
  // The param is in the environment (its uid's and root's to read), not in argv (everyone's).
  EXPECT_THAT(
      env, ElementsAre("PATH=/usr/local/bin:/usr/bin:/bin", "JOBWHEEL_PARAM=secret-ish param",
                       "JOBWHEEL_JOB_ID=3", "JOBWHEEL_RUN_ID=44", "JOBWHEEL_FIRE_ID=9",
                       "JOBWHEEL_SHARD_INDEX=1", "JOBWHEEL_SHARD_TOTAL=4", "JOBWHEEL_ATTEMPT=2"));
}

}  // namespace
}  // namespace jobwheel::sdk
