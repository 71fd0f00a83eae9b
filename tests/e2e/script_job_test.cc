// End to end: shell and python script jobs (GLUE_TYPE_SCRIPT_*) run on an executor started
// with --allow_scripts and succeed; after UpdateJob changes the source, the next run executes
// the new version. Each script appends a line to a file of the test, so executions are
// counted where they happen; the run log shows the script's output and the version run.
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/testing/process.h"
#include "gtest/gtest.h"
#include "tests/e2e/stack_test.h"

namespace jobwheel::e2e {
namespace {

using testing::Ctx;

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

bool HasLine(const std::vector<std::string>& lines, absl::string_view needle) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return absl::StrContains(l, needle); });
}

struct Language {
  jobwheel::v1::GlueType glue_type;
  std::string name;
  // The source of version `v`: prints "<name> v<v> param=<param>" and appends the same to
  // `record`.
  std::function<std::string(int v, const std::string& record)> source;
};

class ScriptJobTest : public StackTest, public ::testing::WithParamInterface<Language> {
 protected:
  std::vector<Stack::ExecutorSpec> ExecutorSpecs() const override {
    Stack::ExecutorSpec spec;
    spec.allow_scripts = true;
    return {spec};
  }

  // Scripts run as an unprivileged user that sees neither the stack's directory (it holds the
  // token and key files) nor anything under the test's private tmp: the records go to a
  // world-writable directory of their own under /tmp.
  void SetUp() override {
    StackTest::SetUp();
    char dir[] = "/tmp/jobwheel-script-records-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    ASSERT_EQ(chmod(dir, 0777), 0);
    records_dir_ = dir;
  }

  void TearDown() override {
    if (!records_dir_.empty()) std::filesystem::remove_all(records_dir_);
    StackTest::TearDown();
  }

  std::string records_dir_;
};

TEST_P(ScriptJobTest, ScriptSucceedsAndAnEditedScriptRunsAsItsNewVersion) {
  const Language& lang = GetParam();
  const std::string record = records_dir_ + "/" + lang.name + ".record";
  jobwheel::v1::Job job = NewJob(lang.name + "-script", "", "p1");
  job.set_glue_type(lang.glue_type);
  job.set_script_source(lang.source(1, record));
  auto created = CreateJob(job);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->script_version(), 1);
  const int64_t job_id = created->id();

  // Version 1 runs and succeeds.
  ASSERT_TRUE(TriggerJob(job_id).ok());
  auto first = AwaitRun(
      job_id,
      [](const jobwheel::v1::Run& r) { return r.status() >= jobwheel::v1::RUN_STATUS_SUCCEEDED; },
      absl::Seconds(30));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->status(), jobwheel::v1::RUN_STATUS_SUCCEEDED) << first->result_message();
  EXPECT_EQ(first->executor_address(), stack_->executor());
  EXPECT_EQ(Lines(record), std::vector<std::string>{lang.name + " v1 param=p1 args=0"});
  std::vector<std::string> log = RunLog(first->id());
  EXPECT_TRUE(HasLine(log, lang.name + " v1 param=p1 args=0")) << absl::StrJoin(log, "\n");
  EXPECT_TRUE(HasLine(log, absl::StrCat(jobwheel::v1::GlueType_Name(lang.glue_type), " v1")))
      << absl::StrJoin(log, "\n");

  // Edit the script: the version is bumped and both versions are kept.
  jobwheel::v1::UpdateJobRequest update;
  update.mutable_job()->set_id(job_id);
  update.mutable_job()->set_script_source(lang.source(2, record));
  update.mutable_update_mask()->add_paths("script_source");
  jobwheel::v1::UpdateJobResponse updated;
  grpc::Status s = admin_->UpdateJob(Ctx(stack_->admin_token()).get(), update, &updated);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(updated.job().script_version(), 2);
  EXPECT_EQ(QueryInt(absl::StrCat("SELECT count(*) FROM scripts WHERE job_id = ", job_id)), 2);

  // The next run executes version 2.
  ASSERT_TRUE(TriggerJob(job_id).ok());
  auto second = AwaitRun(
      job_id,
      [&](const jobwheel::v1::Run& r) {
        return r.id() != first->id() && r.status() >= jobwheel::v1::RUN_STATUS_SUCCEEDED;
      },
      absl::Seconds(30));
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->status(), jobwheel::v1::RUN_STATUS_SUCCEEDED) << second->result_message();
  EXPECT_EQ(Lines(record), (std::vector<std::string>{lang.name + " v1 param=p1 args=0",
                                                     lang.name + " v2 param=p1 args=0"}));
  log = RunLog(second->id());
  EXPECT_TRUE(HasLine(log, lang.name + " v2 param=p1 args=0")) << absl::StrJoin(log, "\n");
  EXPECT_FALSE(HasLine(log, lang.name + " v1 param=p1 args=0")) << absl::StrJoin(log, "\n");
  EXPECT_TRUE(HasLine(log, absl::StrCat(jobwheel::v1::GlueType_Name(lang.glue_type), " v2")))
      << absl::StrJoin(log, "\n");
  EXPECT_EQ(Runs(job_id).size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    Languages, ScriptJobTest,
    ::testing::Values(Language{jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL, "shell",
                               [](int v, const std::string& record) {
                                 return absl::StrCat("set -e\nline=\"shell v", v,
                                                     " param=$JOBWHEEL_PARAM args=$#\"\n",
                                                     "echo \"$line\"\n", "echo \"$line\" >> '",
                                                     record, "'\n");
                               }},
                      Language{jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON, "python",
                               [](int v, const std::string& record) {
                                 return absl::StrCat(
                                     "import os, sys\nline = 'python v", v,
                                     " param=' + os.environ['JOBWHEEL_PARAM'] + ' args=' + "
                                     "str(len(sys.argv) - 1)\nprint(line, flush=True)\n",
                                     "with open('", record, "', 'a') as f:\n",
                                     "    f.write(line + '\\n')\n");
                               }}),
    [](const ::testing::TestParamInfo<Language>& info) { return info.param.name; });

}  // namespace
}  // namespace jobwheel::e2e
