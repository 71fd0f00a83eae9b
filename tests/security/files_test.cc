// The executor's files and script jobs on a shared machine, against the real binaries:
//  - after a script job has run, every directory the executor made (logs, day folders,
//    scripts, work, spool) is 0700 and every file in them 0600;
//  - a script job printing `env` sees no token, no token file path, no JOBWHEEL_* setting of
//    the executor and nothing else of its environment: only the allow-list, HOME being the
//    run's own work directory.
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"

namespace jobwheel::security_testing {

using testing::Ctx;
using testing::Stack;
namespace {

namespace fs = std::filesystem;
using testing::Eventually;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stack_ = std::make_unique<Stack>(Stack::Options{});
    ASSERT_TRUE(stack_->StartServices().ok()) << stack_->Logs();
    // What an executor's environment may well hold: its settings (token file paths among
    // them: ParseFlagsWithEnv reads JOBWHEEL_<FLAG>) and secrets of the embedding service.
    // The command line names the same files, so these change nothing for the executor.
    ::setenv("JOBWHEEL_DISPATCHER_PUBLIC_KEY_FILE", stack_->caller_keys().dispatcher_pub.c_str(),
             1);
    ::setenv("FILES_TEST_SERVICE_SECRET", "hunter2", 1);
    Stack::ExecutorSpec spec;
    spec.allow_scripts = true;
    auto index = stack_->AddExecutor(spec);
    ::unsetenv("JOBWHEEL_DISPATCHER_PUBLIC_KEY_FILE");
    ::unsetenv("FILES_TEST_SERVICE_SECRET");
    ASSERT_TRUE(index.ok()) << index.status() << stack_->Logs();
    executor_ = *index;
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << stack_->Logs();
  }

  std::unique_ptr<v1::JobAdminService::Stub> Jobs() {
    return v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
  }

  // Creates and triggers a shell script job; returns its finished run.
  v1::Run RunScript(const std::string& name, const std::string& source) {
    v1::CreateJobRequest create;
    v1::Job& job = *create.mutable_job();
    job.set_app("demo");
    job.set_name(name);
    job.set_glue_type(v1::GLUE_TYPE_SCRIPT_SHELL);
    job.set_script_source(source);
    job.mutable_schedule()->mutable_none();
    job.set_enabled(true);
    v1::CreateJobResponse created;
    grpc::Status s = Jobs()->CreateJob(Ctx(stack_->admin_token()).get(), create, &created);
    EXPECT_TRUE(s.ok()) << s.error_message();
    v1::TriggerJobRequest trigger;
    trigger.set_id(created.job().id());
    v1::TriggerJobResponse fired;
    s = Jobs()->TriggerJob(Ctx(stack_->admin_token()).get(), trigger, &fired);
    EXPECT_TRUE(s.ok()) << s.error_message();
    v1::Run run;
    EXPECT_TRUE(Eventually(
        [&] {
          v1::ListRunsRequest req;
          req.set_job_id(created.job().id());
          v1::ListRunsResponse resp;
          if (!Jobs()->ListRuns(Ctx(stack_->admin_token()).get(), req, &resp).ok()) return false;
          if (resp.runs().empty()) return false;
          run = resp.runs(0);
          return run.status() == v1::RUN_STATUS_SUCCEEDED || run.status() == v1::RUN_STATUS_FAILED;
        },
        absl::Seconds(30)))
        << run.DebugString();
    return run;
  }

  // The run's log lines without their "yyyy-mm-dd hh:mm:ss.mmm " stamps.
  std::vector<std::string> LogLines(int64_t run_id) {
    std::vector<std::string> lines;
    EXPECT_TRUE(Eventually(
        [&] {
          v1::GetRunLogRequest req;
          req.set_id(run_id);
          v1::GetRunLogResponse resp;
          if (!Jobs()->GetRunLog(Ctx(stack_->admin_token()).get(), req, &resp).ok()) return false;
          lines.clear();
          for (const std::string& l : resp.lines()) {
            const bool stamped = l.size() >= 24 && l[4] == '-' && l[10] == ' ' && l[23] == ' ';
            lines.push_back(stamped ? l.substr(24) : l);
          }
          return std::any_of(lines.begin(), lines.end(),
                             [](const std::string& l) { return l == "END-OF-ENV"; });
        },
        absl::Seconds(20)))
        << absl::StrJoin(lines, "\n");
    return lines;
  }

  std::unique_ptr<Stack> stack_;
  int executor_ = 0;
};

TEST_F(FilesTest, ScriptJobsSeeOnlyTheAllowListedEnvironment) {
  v1::Run run = RunScript("print-env", "env\necho END-OF-ENV\n");
  ASSERT_EQ(run.status(), v1::RUN_STATUS_SUCCEEDED) << run.DebugString();
  const std::vector<std::string> lines = LogLines(run.id());
  const std::string log_dir = stack_->executor_log_dir(executor_);
  const std::string work =
      fs::canonical(log_dir).string() + "/work/run-" + std::to_string(run.id());
  std::set<std::string> names;
  std::string home;
  for (const std::string& line : lines) {
    // No secret, no token file path, no token of any kind.
    EXPECT_FALSE(absl::StrContains(line, "jw_")) << line;
    EXPECT_FALSE(absl::StrContains(line, "TOKEN")) << line;
    EXPECT_FALSE(absl::StrContains(line, "hunter2")) << line;
    EXPECT_FALSE(absl::StrContains(line, stack_->caller_keys().dispatcher_pub)) << line;
    EXPECT_FALSE(absl::StrContains(line, "PRIVATE KEY")) << line;
    EXPECT_FALSE(absl::StrContains(line, stack_->admin_token())) << line;
    const size_t eq = line.find('=');
    if (eq == std::string::npos || line.find(' ') < eq) continue;  // The executor's own lines.
    names.insert(line.substr(0, eq));
    if (line.rfind("HOME=", 0) == 0) home = line.substr(5);
  }
  const std::set<std::string> allowed = {
      "PATH", "HOME", "TMPDIR", "PWD", "LANG", "LC_ALL", "TZ", "JOBWHEEL_JOB_ID", "JOBWHEEL_RUN_ID",
      "JOBWHEEL_FIRE_ID", "JOBWHEEL_SHARD_INDEX", "JOBWHEEL_SHARD_TOTAL", "JOBWHEEL_ATTEMPT",
      // The job's param travels here, not in argv (the script's uid and root read it).
      "JOBWHEEL_PARAM",
      // The shell's own.
      "SHLVL", "OLDPWD", "_"};
  for (const std::string& n : names) EXPECT_EQ(allowed.count(n), 1u) << "script saw " << n;
  EXPECT_EQ(names.count("JOBWHEEL_RUN_ID"), 1u) << absl::StrJoin(lines, "\n");
  EXPECT_EQ(home, work);
  // The work directory went with the run.
  EXPECT_FALSE(fs::exists(work));
}

TEST_F(FilesTest, LogsSpoolAndScriptsArePrivateAfterARun) {
  v1::Run run = RunScript("write-some", "echo hello\necho END-OF-ENV\n");
  ASSERT_EQ(run.status(), v1::RUN_STATUS_SUCCEEDED) << run.DebugString();
  LogLines(run.id());  // The log has been written and flushed.
  const std::string log_dir = stack_->executor_log_dir(executor_);
  const std::string spool_dir =
      fs::path(log_dir).parent_path().string() + "/" +
      absl::StrReplaceAll(fs::path(log_dir).filename().string(), {{"exec-logs", "exec-spool"}});
  int dirs = 0, files = 0;
  for (const std::string& root : {log_dir, spool_dir}) {
    SCOPED_TRACE(root);
    ASSERT_TRUE(fs::is_directory(root));
    struct stat st;
    ASSERT_EQ(::lstat(root.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u) << root;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      ASSERT_EQ(::lstat(entry.path().c_str(), &st), 0);
      if (S_ISDIR(st.st_mode)) {
        ++dirs;
        EXPECT_EQ(st.st_mode & 0777, 0700u) << entry.path();
      } else {
        ++files;
        EXPECT_TRUE(S_ISREG(st.st_mode)) << entry.path();
        EXPECT_EQ(st.st_mode & 0777, 0600u) << entry.path();
      }
    }
  }
  // A day folder, scripts/ and work/ at least; a segment, its index and the script source.
  EXPECT_GE(dirs, 3);
  EXPECT_GE(files, 3);
}

}  // namespace
}  // namespace jobwheel::security_testing
