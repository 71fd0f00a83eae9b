#include "sdk/internal/run_execution.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sdk/internal/run_manager_test_util.h"

namespace jobwheel::sdk {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST_F(RunManagerTest, RunLogIsWrittenWhenTheRunEnds) {
  Make({{"block", gate_.Block()}});
  Submit(Req(1, 7, "block"));
  ASSERT_TRUE(Eventually([&] { return gate_.Started(1); }, kWait));
  // Hold the run's open log, so only Close (not its destruction) can write it.
  bool created = true;
  auto held = logs_.Create(1, &created);
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(created);
  gate_.Open();
  ASSERT_TRUE(WaitResult(1));
  // Closed before the result is reported: every line is in the file now.
  const std::string file = LogFile(1);
  EXPECT_THAT(file, HasSubstr("run 1 accepted"));
  EXPECT_THAT(file, HasSubstr("run 1 started"));
  EXPECT_THAT(file, HasSubstr("handler of run 1 returns"));
  EXPECT_THAT(file, HasSubstr("run 1 ended: SUCCEEDED"));
  EXPECT_EQ(LogText(1) + "\n", file);
}

TEST_F(RunManagerTest, ALongRunsLinesReachTheFileWithinTheFlushInterval) {
  HandlerFn block = gate_.Block();
  Make({{"long", [block](JobContext& ctx) {
           ctx.Log("working");
           return block(ctx);
         }}});
  Submit(Req(1, 7, "long"));
  EXPECT_TRUE(Eventually([&] { return LogFile(1).find("working") != std::string::npos; }, kWait));
  EXPECT_TRUE(manager_->IsActive(1));
  gate_.Open();
  ASSERT_TRUE(WaitResult(1));
}

TEST_F(RunManagerTest, HandlerFailureAndExceptionFail) {
  Make({{"fail", [](JobContext&) { return Result::Fail(418, "teapot"); }},
        {"throw", [](JobContext&) -> Result { throw std::runtime_error("boom"); }}});
  Submit(Req(1, 1, "fail"));
  Submit(Req(2, 2, "throw"));
  ASSERT_TRUE(WaitResult(1) && WaitResult(2));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_EQ(sink_.Get(1).code(), 418);
  EXPECT_EQ(sink_.Get(1).message(), "teapot");
  EXPECT_EQ(sink_.Get(2).status(), jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_THAT(sink_.Get(2).message(), HasSubstr("boom"));
}

TEST_F(RunManagerTest, ContextCarriesTheRequest) {
  absl::Mutex mu;
  RunInfo seen;
  Make({{"look", [&](JobContext& ctx) {
           absl::MutexLock lock(&mu);
           seen = ctx.info();
           return Result::Ok();
         }}});
  RunRequest r = Req(5, 9, "look");
  r.set_param("p=1");
  r.set_shard_index(2);
  r.set_shard_total(4);
  r.set_attempt(3);
  r.set_trigger_type(jobwheel::v1::TRIGGER_TYPE_RETRY);
  *r.mutable_scheduled_time() = ToProto(absl::FromUnixSeconds(1700000000));
  Submit(r);
  ASSERT_TRUE(WaitResult(5));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(seen.run_id, 5);
  EXPECT_EQ(seen.job_id, 9);
  EXPECT_EQ(seen.fire_id, 1005);
  EXPECT_EQ(seen.param, "p=1");
  EXPECT_EQ(seen.shard_index, 2);
  EXPECT_EQ(seen.shard_total, 4);
  EXPECT_EQ(seen.attempt, 3);
  EXPECT_EQ(seen.trigger_type, TriggerType::kRetry);
  EXPECT_EQ(seen.scheduled_time, absl::FromUnixSeconds(1700000000));
  EXPECT_EQ(seen.deadline, absl::InfiniteFuture());
}

TEST_F(RunManagerTest, ShellScriptGetsItsParamAndShardInItsEnvironmentAndExitCode) {
  RunManagerOptions options;
  options.allow_scripts = true;
  Make({}, options);
  RunRequest r = Req(1, 7, "");
  r.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL);
  r.set_script_source(
      "echo \"param: $JOBWHEEL_PARAM shard: $JOBWHEEL_SHARD_INDEX/$JOBWHEEL_SHARD_TOTAL"
      " args: $#\"\necho oops >&2\nexit 3\n");
  r.set_script_version(4);
  r.set_param("hello");
  r.set_shard_index(1);
  r.set_shard_total(2);
  EXPECT_EQ(Submit(r).disposition, jobwheel::v1::RUN_DISPOSITION_STARTED);
  ASSERT_TRUE(WaitResult(1));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_EQ(sink_.Get(1).code(), 3);
  EXPECT_THAT(LogText(1), HasSubstr("param: hello shard: 1/2 args: 0"));
  EXPECT_THAT(LogText(1), HasSubstr("oops"));
  std::ifstream source(dir_ + "/logs/scripts/7_v4.sh");
  EXPECT_TRUE(source.good());

  RunRequest ok = Req(2, 8, "");
  ok.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL);
  ok.set_script_source("exit 0\n");
  Submit(ok);
  ASSERT_TRUE(WaitResult(2));
  EXPECT_EQ(sink_.Get(2).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
}

bool ProcessGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  // A zombie waiting for a reaper that is not ours counts as gone.
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string content((std::istreambuf_iterator<char>(stat)), {});
  size_t close = content.rfind(')');
  return close != std::string::npos && close + 2 < content.size() && content[close + 2] == 'Z';
}

TEST_F(RunManagerTest, KilledScriptTakesItsChildrenWithIt) {
  RunManagerOptions options;
  options.allow_scripts = true;
  Make({}, options);
  const std::string pid_file = dir_ + "/child.pid";
  RunRequest r = Req(1, 7, "");
  r.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL);
  r.set_script_source(
      "sleep 100 &\necho $! > \"$JOBWHEEL_PARAM.tmp\" && mv \"$JOBWHEEL_PARAM.tmp\" "
      "\"$JOBWHEEL_PARAM\"\nwait\n");
  r.set_param(pid_file);
  Submit(r);
  pid_t child = 0;
  ASSERT_TRUE(Eventually(
      [&] {
        std::ifstream in(pid_file);
        return static_cast<bool>(in >> child);
      },
      kWait));
  ASSERT_FALSE(ProcessGone(child));
  EXPECT_TRUE(manager_->Kill(1, "stop").killed);
  ASSERT_TRUE(WaitResult(1));
  EXPECT_EQ(sink_.Get(1).status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_TRUE(Eventually([&] { return ProcessGone(child); }, kWait)) << "sleep " << child;
}

}  // namespace
}  // namespace jobwheel::sdk
