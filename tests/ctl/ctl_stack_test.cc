#include "tests/ctl/ctl_stack_test.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/testing/process.h"

namespace jobwheel::e2e {

using ::jobwheel::testing::CommandResult;

std::string Show(const CommandResult& r) {
  return absl::StrCat("exit ", r.exit_code, "\n--- stdout\n", r.out, "--- stderr\n", r.err);
}

void CtlStackTest::SetUp() {
  StackTest::SetUp();
  if (HasFatalFailure()) return;
  admin_file_ = stack_->dir() + "/admin";  // Written by the stack (the bootstrap admin).
}

CommandResult CtlStackTest::Ctl(const std::vector<std::string>& args,
                                const std::string& token_file) {
  std::vector<std::string> argv = {
      "--scheduler=" + stack_->scheduler(), "--registry=" + stack_->registry(),
      "--token_file=" + (token_file.empty() ? admin_file_ : token_file)};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = ::jobwheel::testing::RunCommand(
      ::jobwheel::testing::RunfilePath("tools/jobwheelctl/jobwheelctl"), argv);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : CommandResult{};
}

void CtlStackTest::ExpectError(const CommandResult& r, int code, absl::string_view message) {
  EXPECT_EQ(r.exit_code, code) << Show(r);
  EXPECT_TRUE(absl::StrContains(r.err, message)) << "want \"" << message << "\"\n" << Show(r);
  EXPECT_TRUE(r.out.empty()) << Show(r);
}

}  // namespace jobwheel::e2e
