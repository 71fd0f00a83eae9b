#include "sdk/internal/script_runner.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobwheel/cancellation.h"

namespace jobwheel::sdk {
namespace {

using ::jobwheel::testing::Eventually;
using ::testing::ElementsAre;

class ScriptRunnerTest : public ::testing::Test {
 protected:
  ScriptRunnerTest()
      : dir_(jobwheel::testing::TestTempDir(
            ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    options_.scripts_dir = dir_ + "/scripts";
    options_.kill_grace = absl::Milliseconds(300);
  }

  std::vector<std::string> Lines() {
    absl::MutexLock lock(&mu_);
    return lines_;
  }
  std::function<void(absl::string_view)> Output() {
    return [this](absl::string_view l) {
      absl::MutexLock lock(&mu_);
      lines_.emplace_back(l);
    };
  }

  std::string dir_;
  ScriptRunnerOptions options_;
  absl::Mutex mu_;
  std::vector<std::string> lines_;
};

// What a run's context holds for its param "x y", shard 0 of 1.
ScriptContext ParamContext(const std::string& param) {
  return ScriptContext{0, {{"JOBWHEEL_PARAM", param}}, {param, "0", "1"}};
}

TEST_F(ScriptRunnerTest, RunsShellWithTheParamInItsEnvironmentNotItsArguments) {
  ScriptRunner runner(options_);
  // /proc/<pid>/cmdline is what `ps` shows every local user.
  auto path = runner.Materialize(5, 2, ScriptRunner::Language::kShell,
                                 "echo \"param=$JOBWHEEL_PARAM args=$#\"\n"
                                 "echo \"cmdline=$(tr '\\0' ' ' < /proc/$$/cmdline)\"\n"
                                 "echo err >&2\nprintf tail\nexit 7\n");
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(*path, dir_ + "/scripts/5_v2.sh");
  CancellationToken token;
  auto outcome = runner.Run(ScriptRunner::Language::kShell, *path, token, Output(), nullptr,
                            ParamContext("x y"));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->exited);
  EXPECT_EQ(outcome->exit_code, 7);
  EXPECT_THAT(Lines(), ElementsAre("param=x y args=0", absl::StrCat("cmdline=/bin/sh ", *path, " "),
                                   "err", "tail"));
}

TEST_F(ScriptRunnerTest, LegacySwitchAlsoPassesParamAndShardAsArguments) {
  options_.params_in_argv = true;
  ScriptRunner runner(options_);
  auto path = runner.Materialize(5, 3, ScriptRunner::Language::kShell,
                                 "echo \"a=$1 b=$2 c=$3 env=$JOBWHEEL_PARAM\"\n");
  ASSERT_TRUE(path.ok());
  CancellationToken token;
  auto outcome = runner.Run(ScriptRunner::Language::kShell, *path, token, Output(), nullptr,
                            ParamContext("x y"));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->exit_code, 0);
  EXPECT_THAT(Lines(), ElementsAre("a=x y b=0 c=1 env=x y"));
}

TEST_F(ScriptRunnerTest, RunsPythonWithTheParamInItsEnvironment) {
  ScriptRunner runner(options_);
  auto path = runner.Materialize(
      6, 1, ScriptRunner::Language::kPython,
      "import os, sys\nprint('py', os.environ['JOBWHEEL_PARAM'], sys.argv[1:])\nsys.exit(0)\n");
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(*path, dir_ + "/scripts/6_v1.py");
  CancellationToken token;
  auto outcome = runner.Run(ScriptRunner::Language::kPython, *path, token, Output(), nullptr,
                            ParamContext("hi"));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->exited);
  EXPECT_EQ(outcome->exit_code, 0);
  EXPECT_THAT(Lines(), ElementsAre("py hi []"));
}

TEST_F(ScriptRunnerTest, MaterializeRewritesOnlyChangedSources) {
  ScriptRunner runner(options_);
  auto a = runner.Materialize(1, 1, ScriptRunner::Language::kShell, "echo one\n");
  ASSERT_TRUE(a.ok());
  auto b = runner.Materialize(1, 1, ScriptRunner::Language::kShell, "echo two\n");
  ASSERT_TRUE(b.ok());
  std::ifstream in(*b);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "echo two\n");
  EXPECT_FALSE(runner.Materialize(0, 1, ScriptRunner::Language::kShell, "x").ok());
}

bool Gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string content((std::istreambuf_iterator<char>(stat)), {});
  size_t close = content.rfind(')');
  return close != std::string::npos && close + 2 < content.size() && content[close + 2] == 'Z';
}

TEST_F(ScriptRunnerTest, CancelKillsTheWholeProcessGroup) {
  ScriptRunner runner(options_);
  // The shell ignores SIGTERM, so only SIGKILL after the grace ends it; its `sleep 100`
  // child must die too.
  auto path =
      runner.Materialize(2, 1, ScriptRunner::Language::kShell,
                         "trap '' TERM\nsleep 100 &\necho \"child $!\"\nwait\nwait\nwait\n");
  ASSERT_TRUE(path.ok());
  CancellationToken token;
  pid_t group = 0;
  absl::StatusOr<ScriptOutcome> outcome;
  std::thread t([&] {
    outcome = runner.Run(ScriptRunner::Language::kShell, *path, token, Output(),
                         [&](pid_t pg) { group = pg; });
  });
  pid_t child = 0;
  ASSERT_TRUE(Eventually(
      [&] {
        for (const auto& l : Lines()) {
          if (l.rfind("child ", 0) == 0) child = std::stoi(l.substr(6));
        }
        return child > 0;
      },
      absl::Seconds(10)));
  EXPECT_FALSE(Gone(child));
  token.Cancel(CancelReason::kKilled, "test");
  t.join();
  ASSERT_TRUE(outcome.ok());
  EXPECT_FALSE(outcome->exited);
  EXPECT_EQ(outcome->term_signal, SIGKILL);
  EXPECT_GT(group, 0);
  EXPECT_TRUE(Eventually([&] { return Gone(child); }, absl::Seconds(10)));
}

TEST_F(ScriptRunnerTest, LeftoverBackgroundChildrenAreKilledWhenTheScriptExits) {
  ScriptRunner runner(options_);
  auto path = runner.Materialize(3, 1, ScriptRunner::Language::kShell,
                                 "sleep 100 &\necho \"child $!\"\nexit 0\n");
  ASSERT_TRUE(path.ok());
  CancellationToken token;
  auto outcome = runner.Run(ScriptRunner::Language::kShell, *path, token, Output());
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->exit_code, 0);
  pid_t child = 0;
  for (const auto& l : Lines()) {
    if (l.rfind("child ", 0) == 0) child = std::stoi(l.substr(6));
  }
  ASSERT_GT(child, 0);
  EXPECT_TRUE(Eventually([&] { return Gone(child); }, absl::Seconds(10)));
}

TEST_F(ScriptRunnerTest, MissingInterpreterFails) {
  options_.python_binary = "/nonexistent/python3";
  ScriptRunner runner(options_);
  auto path = runner.Materialize(4, 1, ScriptRunner::Language::kPython, "print(1)\n");
  ASSERT_TRUE(path.ok());
  CancellationToken token;
  auto outcome = runner.Run(ScriptRunner::Language::kPython, *path, token, Output());
  EXPECT_FALSE(outcome.ok());
}

TEST_F(ScriptRunnerTest, ScriptsGetAScrubbedEnvironmentAPrivateWorkDirAndNoOpenFiles) {
  // What an executor's environment may hold; none of it may reach a script.
  ::setenv("JOBWHEEL_CLUSTER_TOKEN_FILE", "/etc/jobwheel/cluster", 1);
  ::setenv("JOBWHEEL_EXECUTOR_TOKEN", "jw_0123", 1);
  ::setenv("SCRIPT_TEST_PARENT_SECRET", "hunter2", 1);
  // An open file of the executor's (a token file read at start, a database socket...).
  const std::string token_file = dir_ + "/token";
  std::ofstream(token_file) << "jw_secret\n";
  // Not O_CLOEXEC on purpose, and at a number no shell uses itself.
  const int opened = ::open(token_file.c_str(), O_RDONLY);
  ASSERT_GE(opened, 3);
  const int held = ::fcntl(opened, F_DUPFD, 50);
  ::close(opened);
  ASSERT_GE(held, 50);

  ScriptRunner runner(options_);
  auto path = runner.Materialize(9, 1, ScriptRunner::Language::kShell,
                                 "env\necho \"cwd=$(pwd)\"\n"
                                 "echo \"mode=$(stat -c %a .)\"\n"
                                 "for f in /proc/self/fd/*; do echo \"fd=${f##*/}\"; done\n");
  ASSERT_TRUE(path.ok());
  struct stat st;
  ASSERT_EQ(::stat(path->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(options_.scripts_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  CancellationToken token;
  ScriptContext context{77, {{"JOBWHEEL_RUN_ID", "77"}, {"JOBWHEEL_JOB_ID", "9"}}};
  auto outcome =
      runner.Run(ScriptRunner::Language::kShell, *path, token, Output(), nullptr, context);
  ::close(held);
  ::unsetenv("JOBWHEEL_CLUSTER_TOKEN_FILE");
  ::unsetenv("JOBWHEEL_EXECUTOR_TOKEN");
  ::unsetenv("SCRIPT_TEST_PARENT_SECRET");
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->exit_code, 0);

  const std::string work = dir_ + "/work/run-77";
  std::set<std::string> names;
  std::vector<std::string> fds;
  for (const std::string& line : Lines()) {
    EXPECT_EQ(line.find("jw_"), std::string::npos) << line;
    EXPECT_EQ(line.find("hunter2"), std::string::npos) << line;
    EXPECT_EQ(line.find("TOKEN"), std::string::npos) << line;
    if (line.rfind("fd=", 0) == 0) {
      fds.push_back(line.substr(3));
      continue;
    }
    const size_t eq = line.find('=');
    if (eq != std::string::npos && line.rfind("cwd=", 0) != 0 && line.rfind("mode=", 0) != 0) {
      names.insert(line.substr(0, eq));
    }
  }
  // sh adds PWD/OLDPWD/SHLVL/_ of its own; everything else is the allow-list.
  for (const std::string& n : names) {
    EXPECT_TRUE(n == "PATH" || n == "HOME" || n == "TMPDIR" || n == "PWD" || n == "LANG" ||
                n == "LC_ALL" || n == "TZ" || n == "JOBWHEEL_RUN_ID" || n == "JOBWHEEL_JOB_ID" ||
                n == "SHLVL" || n == "OLDPWD" || n == "_")
        << n;
  }
  std::vector<std::string> lines = Lines();
  EXPECT_NE(std::find(lines.begin(), lines.end(), "HOME=" + work), lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), "JOBWHEEL_RUN_ID=77"), lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), "cwd=" + work), lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), "mode=700"), lines.end());
  // stdin, stdout, stderr, and what the shell opened itself: the script (dash keeps it at
  // 10) and the /proc/self/fd directory its glob reads.
  EXPECT_LE(fds.size(), 5u) << absl::StrJoin(fds, ",");
  EXPECT_EQ(std::find(fds.begin(), fds.end(), std::to_string(held)), fds.end());
  // The work directory is gone with the run.
  EXPECT_NE(::stat(work.c_str(), &st), 0);
}

// Whether this process may create a user namespace (a child tries, so this one is unchanged).
bool UserNamespacesWork() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(::unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 ? 0 : 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The executor's secrets as a script would look for them: a token file in its own directory,
// a file in the executor's private log directory, and the executor's environment.
class IsolatedScriptTest : public ScriptRunnerTest {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir((dir_ + "/secrets").c_str(), 0700), 0);
    token_file_ = dir_ + "/secrets/executor.token";
    std::ofstream(token_file_) << "jw_token_secret\n";
    ASSERT_EQ(::mkdir((dir_ + "/logs").c_str(), 0700), 0);
    private_file_ = dir_ + "/logs/private.log";
    std::ofstream(private_file_) << "jw_private_secret\n";
    ::setenv("ISOLATION_TEST_ENV_SECRET", "jw_env_secret", 1);
    options_.scripts_dir = dir_ + "/logs/scripts";
    options_.hidden_paths = {dir_ + "/secrets", dir_ + "/logs", dir_ + "/missing"};
  }
  void TearDown() override { ::unsetenv("ISOLATION_TEST_ENV_SECRET"); }

  // A script trying every secret; its work directory must still be its own.
  std::string ProbeSource() const {
    return absl::StrCat(
        "echo \"uid=$(id -u) gid=$(id -g)\"\n", "cat ", token_file_, " || echo token-refused\n",
        "cat ", private_file_, " || echo private-refused\n", "cat /proc/", ::getpid(),
        "/environ || echo environ-refused\n", "ls /proc/", ::getpid(),
        "/root/ >/dev/null 2>&1 || echo root-refused\n",
        "echo hello > made-here && cat made-here\n", "touch ", dir_,
        "/logs/planted 2>/dev/null || echo plant-refused\n", "echo \"cwd=$(pwd)\"\n",
        "for f in /proc/self/fd/*; do echo \"fd=${f##*/}\"; done\n");
  }

  void ExpectIsolated(const absl::StatusOr<ScriptOutcome>& outcome, const std::string& uid) {
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    const std::vector<std::string> lines = Lines();
    const std::string all = absl::StrJoin(lines, "\n");
    EXPECT_EQ(outcome->exit_code, 0) << all;
    EXPECT_FALSE(absl::StrContains(all, "jw_")) << all;  // No secret of any kind.
    EXPECT_TRUE(absl::StrContains(all, "token-refused")) << all;
    EXPECT_TRUE(absl::StrContains(all, "private-refused")) << all;
    EXPECT_TRUE(absl::StrContains(all, "environ-refused")) << all;
    EXPECT_TRUE(absl::StrContains(all, "root-refused")) << all;
    EXPECT_TRUE(absl::StrContains(all, "plant-refused")) << all;
    EXPECT_TRUE(absl::StrContains(all, "uid=" + uid + " ")) << all;
    EXPECT_NE(std::find(lines.begin(), lines.end(), "hello"), lines.end()) << all;
    EXPECT_NE(std::find(lines.begin(), lines.end(), "cwd=" + dir_ + "/logs/work/run-31"),
              lines.end())
        << all;
    int fds = 0;
    for (const std::string& l : lines) fds += l.rfind("fd=", 0) == 0 ? 1 : 0;
    EXPECT_LE(fds, 5) << all;
    struct stat st;
    EXPECT_NE(::stat((dir_ + "/logs/planted").c_str(), &st), 0);
    EXPECT_NE(::stat((dir_ + "/logs/work/run-31").c_str(), &st), 0) << "work dir left behind";
    EXPECT_EQ(Slurp(token_file_), "jw_token_secret\n");
  }

  std::string token_file_;
  std::string private_file_;
};

TEST_F(IsolatedScriptTest, SwitchUserHidesTheExecutorsSecretsAndRunsAsTheScriptUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "switching users needs root";
  auto nobody = ResolveScriptUser("nobody");
  ASSERT_TRUE(nobody.ok()) << nobody.status();
  options_.isolation = ScriptIsolation::kSwitchUser;
  options_.script_uid = nobody->uid;
  options_.script_gid = nobody->gid;
  ScriptRunner runner(options_);
  auto path = runner.Materialize(31, 1, ScriptRunner::Language::kShell, ProbeSource());
  ASSERT_TRUE(path.ok());
  CancellationToken token;
  auto outcome = runner.Run(ScriptRunner::Language::kShell, *path, token, Output(), nullptr,
                            ScriptContext{31, {}});
  ExpectIsolated(outcome, std::to_string(nobody->uid));
}

TEST_F(IsolatedScriptTest, UserNamespaceHidesTheExecutorsSecrets) {
  if (!UserNamespacesWork()) GTEST_SKIP() << "user namespaces are not available here";
  options_.isolation = ScriptIsolation::kUserNamespace;
  ScriptRunner runner(options_);
  auto path = runner.Materialize(31, 1, ScriptRunner::Language::kShell, ProbeSource());
  ASSERT_TRUE(path.ok());
  CancellationToken token;
  auto outcome = runner.Run(ScriptRunner::Language::kShell, *path, token, Output(), nullptr,
                            ScriptContext{31, {}});
  ExpectIsolated(outcome, std::to_string(::getuid()));
}

TEST_F(IsolatedScriptTest, FailsClosedWhenIsolationCannotBeSetUp) {
  options_.isolation = DefaultScriptIsolation();
  options_.script_uid = 65534;
  options_.script_gid = 65534;
  const std::string marker = dir_ + "/ran";
  for (const std::vector<std::string>& hidden :
       {std::vector<std::string>{"/"}, std::vector<std::string>{dir_ + "/logs", "/."}}) {
    options_.hidden_paths = hidden;
    ScriptRunner runner(options_);
    auto path = runner.Materialize(32, 1, ScriptRunner::Language::kShell,
                                   absl::StrCat("touch ", marker, "\n"));
    ASSERT_TRUE(path.ok());
    CancellationToken token;
    auto outcome = runner.Run(ScriptRunner::Language::kShell, *path, token, Output(), nullptr,
                              ScriptContext{32, {}});
    ASSERT_FALSE(outcome.ok());
    EXPECT_EQ(outcome.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(outcome.status().message()), ::testing::HasSubstr("script not run"));
    struct stat st;
    EXPECT_NE(::stat(marker.c_str(), &st), 0) << "the script ran";
  }
  // And without a run (no work directory) nothing runs isolated either.
  ScriptRunner runner(options_);
  auto path = runner.Materialize(33, 1, ScriptRunner::Language::kShell, "exit 0\n");
  ASSERT_TRUE(path.ok());
  CancellationToken token;
  EXPECT_FALSE(runner.Run(ScriptRunner::Language::kShell, *path, token, Output()).ok());
  const std::vector<std::string> lines = Lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines.back(), ::testing::HasSubstr("script not run: cannot isolate it"));
}

TEST(ResolveScriptUserTest, RefusesRootUnknownAndEmpty) {
  EXPECT_EQ(ResolveScriptUser("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveScriptUser("root").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveScriptUser("0").status().code(), absl::StatusCode::kInvalidArgument);
  auto unknown = ResolveScriptUser("no-such-user-here");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.status().message()), ::testing::HasSubstr("script_user"));
  auto nobody = ResolveScriptUser("nobody");
  ASSERT_TRUE(nobody.ok()) << nobody.status();
  EXPECT_NE(nobody->uid, 0u);
  auto numeric = ResolveScriptUser("4242");
  ASSERT_TRUE(numeric.ok());
  EXPECT_EQ(numeric->uid, 4242u);
}

TEST_F(ScriptRunnerTest, CleanupNeverFollowsWhatTheScriptLeft) {
  const std::string outside = dir_ + "/outside";
  ASSERT_EQ(::mkdir(outside.c_str(), 0755), 0);
  std::ofstream(outside + "/keep") << "keep\n";
  ScriptRunner runner(options_);
  auto path = runner.Materialize(
      34, 1, ScriptRunner::Language::kShell,
      absl::StrCat("ln -s ", outside, " dirlink\nln -s ", outside, "/keep filelink\n",
                   "mkdir -p deep/er && ln -s ", outside, " deep/er/link\n",
                   "mkdir locked && touch locked/f && chmod 000 locked\n"));
  ASSERT_TRUE(path.ok());
  CancellationToken token;
  auto outcome = runner.Run(ScriptRunner::Language::kShell, *path, token, Output(), nullptr,
                            ScriptContext{34, {}});
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->exit_code, 0) << absl::StrJoin(Lines(), "\n");
  struct stat st;
  EXPECT_NE(::lstat((dir_ + "/work/run-34").c_str(), &st), 0);
  EXPECT_EQ(Slurp(outside + "/keep"), "keep\n");
}

TEST(RemoveTreeTest, RemovesFilesDirectoriesAndLinksButNotTheirTargets) {
  const std::string dir = jobwheel::testing::TestTempDir("remove_tree");
  const std::string target = dir + "/target";
  ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);
  std::ofstream(target + "/f") << "x";
  const std::string tree = dir + "/tree";
  ASSERT_EQ(::mkdir(tree.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(target.c_str(), (tree + "/l").c_str()), 0);
  ASSERT_EQ(::mkdir((tree + "/sub").c_str(), 0), 0);
  EXPECT_TRUE(RemoveTree(tree).ok());
  struct stat st;
  EXPECT_NE(::lstat(tree.c_str(), &st), 0);
  EXPECT_EQ(::stat((target + "/f").c_str(), &st), 0);
  EXPECT_TRUE(RemoveTree(tree).ok());  // Already gone: fine.
}

TEST(RemoveTreeTest, LeavesWhatIsTooDeepAndSaysSo) {
  const std::string dir = jobwheel::testing::TestTempDir("remove_deep_tree");
  // Made with mkdirat level by level (the whole path would be long).
  auto make_deep = [&](const std::string& name, int levels) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    std::string next = name;
    for (int i = 0; i < levels; ++i) {
      EXPECT_EQ(::mkdirat(fd, next.c_str(), 0700), 0);
      const int child = ::openat(fd, next.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      ::close(fd);
      fd = child;
      next = "d";
    }
    ::close(fd);
  };
  make_deep("shallow", kMaxRemoveDepth);
  make_deep("deep", 300);
  EXPECT_TRUE(RemoveTree(dir + "/shallow").ok());
  struct stat st;
  EXPECT_NE(::lstat((dir + "/shallow").c_str(), &st), 0);
  absl::Status deep = RemoveTree(dir + "/deep");
  EXPECT_EQ(deep.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(deep.message()), ::testing::HasSubstr("not removed: too deep"));
  EXPECT_EQ(::lstat((dir + "/deep").c_str(), &st), 0);
}

TEST(PlanIsolationTest, KeepsNoHiddenDirectoryBelowAnotherWhateverTheirOrder) {
  const std::string dir = jobwheel::testing::TestTempDir("plan_nesting");
  for (const char* d : {"/a", "/a-b", "/a/c", "/work"}) {
    ASSERT_EQ(::mkdir((dir + d).c_str(), 0700), 0) << d;
  }
  std::ofstream(dir + "/a/c/f") << "x";
  auto plan =
      PlanIsolation(ScriptIsolation::kUserNamespace,
                    {dir + "/a", dir + "/a-b", dir + "/a/c", dir + "/a/c/f"}, dir + "/work", 0, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->tmpfs_dirs, ElementsAre(dir + "/a", dir + "/a-b"));
  EXPECT_TRUE(plan->null_files.empty());
}

TEST(HiddenPathForCredentialTest, HidesTheDirectoryOrTheFileInATopLevelOne) {
  EXPECT_EQ(HiddenPathForCredential(""), "");
  EXPECT_EQ(HiddenPathForCredential("/etc/jobwheel/tls/executor.key"), "/etc/jobwheel/tls");
  EXPECT_EQ(HiddenPathForCredential("/etc/executor.key"), "/etc/executor.key");
  EXPECT_EQ(HiddenPathForCredential("/executor.key"), "/executor.key");
  EXPECT_EQ(HiddenPathForCredential("/srv/keys/../keys/x.key"), "/srv/keys");
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
  EXPECT_EQ(HiddenPathForCredential("keys/x.key"), std::string(cwd) + "/keys");
}

// An embedding process may run with descriptors 0-2 closed: the child's pipes then start at 0
// and must still become the script's stdout/stderr (and nothing else be inherited).
void ExpectRunsWithStdioClosed(ScriptRunnerOptions options, const std::string& dir) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(0);
    ::close(1);
    ::close(2);
    std::vector<std::string> lines;
    ScriptRunner runner(options);
    auto path = runner.Materialize(41, 1, ScriptRunner::Language::kShell,
                                   "echo out\necho err >&2\n"
                                   "for f in /proc/self/fd/*; do echo \"fd=${f##*/}\"; done\n");
    if (!path.ok()) ::_exit(2);
    CancellationToken token;
    auto outcome = runner.Run(
        ScriptRunner::Language::kShell, *path, token,
        [&lines](absl::string_view l) { lines.emplace_back(l); }, nullptr, ScriptContext{41, {}});
    if (!outcome.ok() || outcome->exit_code != 0) ::_exit(3);
    std::ofstream(dir + "/child-lines") << absl::StrJoin(lines, "\n") << "\n";
    int fds = 0;
    for (const std::string& l : lines) fds += l.rfind("fd=", 0) == 0 ? 1 : 0;
    const bool out = std::find(lines.begin(), lines.end(), "out") != lines.end();
    const bool err = std::find(lines.begin(), lines.end(), "err") != lines.end();
    ::_exit(out && err && fds <= 5 ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << Slurp(dir + "/child-lines");
}

TEST_F(ScriptRunnerTest, RunsWhenTheEmbeddingProcessHasStdioClosed) {
  ExpectRunsWithStdioClosed(options_, dir_);
}

TEST_F(IsolatedScriptTest, UserNamespaceRunsWhenTheEmbeddingProcessHasStdioClosed) {
  if (!UserNamespacesWork()) GTEST_SKIP() << "user namespaces are not available here";
  options_.isolation = ScriptIsolation::kUserNamespace;
  ExpectRunsWithStdioClosed(options_, dir_);
}

}  // namespace
}  // namespace jobwheel::sdk
