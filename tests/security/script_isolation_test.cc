// Script jobs cannot read the executor's credentials, against the real binaries: a shell job
// that tries `cat` on the executor's token file, on a file in the executor's private log
// directory and on /proc/<executor pid>/environ is refused each time (the run's log shows the
// refusals and none of the secrets), and `id -u` shows the script user (`nobody` for an
// executor running as root; the executor's own uid in a user namespace otherwise).
#include <pwd.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"

namespace jobwheel::security_testing {

using testing::Ctx;
using testing::ReadFile;
using testing::Stack;
using testing::WriteFile;
namespace {

using testing::Eventually;

constexpr char kEnvSecret[] = "jw_environ_secret_5e1f";
constexpr char kPrivateSecret[] = "jw_private_secret_77aa";

// Whether this process may create a user namespace (tried in a child).
bool UserNamespacesWork() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(::unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 ? 0 : 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

class ScriptIsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0 && !UserNamespacesWork()) {
      GTEST_SKIP() << "not root and user namespaces are unavailable: script jobs cannot be "
                      "isolated here (the executor would refuse every script run)";
    }
    stack_ = std::make_unique<Stack>(Stack::Options{});
    ASSERT_TRUE(stack_->StartServices().ok()) << stack_->Logs();
    // A secret in the executor's environment (inherited from this process).
    ::setenv("SCRIPT_ISOLATION_TEST_SECRET", kEnvSecret, 1);
    Stack::ExecutorSpec spec;
    spec.allow_scripts = true;
    auto index = stack_->AddExecutor(spec);
    ::unsetenv("SCRIPT_ISOLATION_TEST_SECRET");
    ASSERT_TRUE(index.ok()) << index.status() << stack_->Logs();
    executor_ = *index;
    token_file_ = absl::StrCat(stack_->dir(), "/executor-demo-", executor_);
    token_ = ReadFile(token_file_);
    while (!token_.empty() && token_.back() == '\n') token_.pop_back();
    ASSERT_FALSE(token_.empty()) << token_file_;
    private_file_ = stack_->executor_log_dir(executor_) + "/planted-secret";
    WriteFile(private_file_, absl::StrCat(kPrivateSecret, "\n"));
  }
  void TearDown() override {
    if (HasFailure() && stack_ != nullptr) std::cerr << stack_->Logs();
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

  // The run's log lines once `last` has been logged.
  std::vector<std::string> LogLines(int64_t run_id, const std::string& last) {
    std::vector<std::string> lines;
    EXPECT_TRUE(Eventually(
        [&] {
          v1::GetRunLogRequest req;
          req.set_id(run_id);
          v1::GetRunLogResponse resp;
          if (!Jobs()->GetRunLog(Ctx(stack_->admin_token()).get(), req, &resp).ok()) return false;
          lines.assign(resp.lines().begin(), resp.lines().end());
          return std::any_of(lines.begin(), lines.end(),
                             [&](const std::string& l) { return absl::EndsWith(l, last); });
        },
        absl::Seconds(20)))
        << absl::StrJoin(lines, "\n");
    return lines;
  }

  std::unique_ptr<Stack> stack_;
  int executor_ = 0;
  std::string token_file_;
  std::string token_;
  std::string private_file_;
};

TEST_F(ScriptIsolationTest, ScriptCannotReadTheExecutorsTokenPrivateFilesOrEnvironment) {
  const pid_t executor_pid = stack_->executor_process(executor_).pid();
  ASSERT_GT(executor_pid, 0);
  // The secrets are really there for the executor's own user.
  ASSERT_EQ(ReadFile(private_file_), absl::StrCat(kPrivateSecret, "\n"));
  ASSERT_TRUE(
      absl::StrContains(ReadFile(absl::StrCat("/proc/", executor_pid, "/environ")), kEnvSecret));

  const std::string source =
      absl::StrCat("echo \"uid=$(id -u)\"\n",                                         //
                   "cat '", token_file_, "' || echo TOKEN-REFUSED\n",                 //
                   "cat '", private_file_, "' || echo PRIVATE-REFUSED\n",             //
                   "cat /proc/", executor_pid, "/environ || echo ENVIRON-REFUSED\n",  //
                   "echo END-OF-PROBE\n");
  v1::Run run = RunScript("probe-secrets", source);
  ASSERT_EQ(run.status(), v1::RUN_STATUS_SUCCEEDED) << run.DebugString();
  const std::vector<std::string> lines = LogLines(run.id(), "END-OF-PROBE");
  const std::string log = absl::StrJoin(lines, "\n");

  EXPECT_TRUE(absl::StrContains(log, "TOKEN-REFUSED")) << log;
  EXPECT_TRUE(absl::StrContains(log, "PRIVATE-REFUSED")) << log;
  EXPECT_TRUE(absl::StrContains(log, "ENVIRON-REFUSED")) << log;
  for (const std::string& secret :
       {token_, std::string(kPrivateSecret), std::string(kEnvSecret), stack_->admin_token()}) {
    EXPECT_FALSE(absl::StrContains(log, secret)) << log;
    EXPECT_FALSE(absl::StrContains(run.result_message(), secret)) << run.DebugString();
  }

  uid_t expected = ::getuid();
  if (::geteuid() == 0) {
    struct passwd* nobody = ::getpwnam("nobody");
    ASSERT_NE(nobody, nullptr);
    expected = nobody->pw_uid;
  }
  EXPECT_NE(std::find_if(lines.begin(), lines.end(),
                         [&](const std::string& l) {
                           return absl::EndsWith(l, absl::StrCat("uid=", expected));
                         }),
            lines.end())
      << log;

  // The executor still has its own files.
  EXPECT_EQ(ReadFile(private_file_), absl::StrCat(kPrivateSecret, "\n"));
}

}  // namespace
}  // namespace jobwheel::security_testing
