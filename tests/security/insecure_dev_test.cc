// --insecure_dev with the real binaries: only from the command line (JOBWHEEL_INSECURE_DEV in
// the environment makes every binary refuse to start, saying why) and only on a loopback
// listener (0.0.0.0 or another host's address: refused to start with a clear message).
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "gtest/gtest.h"

namespace jobwheel::security_testing {

using testing::Addr;
using testing::ReadFile;
namespace {

using testing::PickFreePort;

struct Binary {
  std::string name;
  std::string path;
  std::vector<std::string> args;  // Besides --listen.
};

std::vector<Binary> Binaries(const std::string& dir) {
  // Never reached: each refusal comes before any connection.
  const std::string dsn = "--db_dsn=host=127.0.0.1 port=1 dbname=never connect_timeout=1";
  return {
      {"scheduler",
       testing::kSchedulerBinary,
       {dsn, "--metrics_address=", "--dispatcher_target=127.0.0.1:1"}},
      {"registry", testing::kRegistryBinary, {dsn, "--metrics_address="}},
      {"dispatcher",
       testing::kDispatcherBinary,
       {dsn, "--metrics_address=", "--registry_target=127.0.0.1:1"}},
      {"demo_executor",
       testing::kDemoExecutorBinary,
       {"--app=demo", "--registry_target=", "--dispatcher_target=", "--metrics_address=",
        "--log_dir=" + dir + "/logs", "--spool_dir=" + dir + "/spool"}},
  };
}

// Runs the binary to its exit (it must exit within 30 s) and returns its code and log.
int RunToExit(const Binary& b, const std::vector<std::string>& args,
              const std::vector<std::string>& env, const std::string& log, std::string* text) {
  absl::StatusOr<int> code = testing::RunToExit(b.path, args, log, env, absl::Seconds(30));
  EXPECT_TRUE(code.ok()) << b.name << ": " << code.status();
  *text = ReadFile(log);
  return code.ok() ? *code : -1;
}

TEST(InsecureDevTest, RefusedOnAListenerOtherHostsCanReach) {
  const std::string dir = testing::TestTempDir("insecure_dev_listen");
  for (const Binary& b : Binaries(dir)) {
    for (const char* host : {"0.0.0.0", "[::]"}) {
      SCOPED_TRACE(b.name + " on " + host);
      std::vector<std::string> args = b.args;
      args.push_back(absl::StrCat("--listen=", host, ":", PickFreePort()));
      args.push_back("--insecure_dev");
      std::string text;
      const int code = RunToExit(b, args, {}, dir + "/" + b.name + ".log", &text);
      EXPECT_NE(code, 0) << text;
      EXPECT_TRUE(absl::StrContains(text, "loopback")) << text;
      EXPECT_TRUE(absl::StrContains(text, "insecure_dev")) << text;
      EXPECT_FALSE(absl::StrContains(text, "serving on")) << text;
    }
  }
}

TEST(InsecureDevTest, NeverTakenFromTheEnvironment) {
  const std::string dir = testing::TestTempDir("insecure_dev_env");
  for (const Binary& b : Binaries(dir)) {
    SCOPED_TRACE(b.name);
    std::vector<std::string> args = b.args;
    args.push_back("--listen=" + Addr(PickFreePort()));
    std::string text;
    // No credentials at all: without the refusal, the variable would have let it serve
    // unauthenticated (or, ignored, it would fail for the lack of tokens).
    const int code =
        RunToExit(b, args, {"JOBWHEEL_INSECURE_DEV=true"}, dir + "/" + b.name + ".log", &text);
    EXPECT_NE(code, 0) << text;
    EXPECT_TRUE(absl::StrContains(text, "JOBWHEEL_INSECURE_DEV is set")) << text;
    EXPECT_TRUE(absl::StrContains(text, "only from the command line")) << text;
  }
}

}  // namespace
}  // namespace jobwheel::security_testing
