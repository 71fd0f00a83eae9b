#ifndef JOBWHEEL_TESTS_CTL_CTL_STACK_TEST_H_
#define JOBWHEEL_TESTS_CTL_CTL_STACK_TEST_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/testing/command.h"
#include "tests/e2e/stack_test.h"

// A StackTest that runs the jobwheelctl binary against its stack, for the tests/ctl tests.
namespace jobwheel::e2e {

// Exit code, stdout and stderr of a run, for failure messages.
std::string Show(const ::jobwheel::testing::CommandResult& r);

class CtlStackTest : public StackTest {
 protected:
  void SetUp() override;

  // jobwheelctl against the stack with `token_file` (default: the admin token) and `args`.
  ::jobwheel::testing::CommandResult Ctl(const std::vector<std::string>& args,
                                         const std::string& token_file = "");

  // Expects exit `code` with `message` on stderr (and nothing on stdout).
  void ExpectError(const ::jobwheel::testing::CommandResult& r, int code,
                   absl::string_view message);

  std::string admin_file_;  // The bootstrap admin token the stack wrote.
};

}  // namespace jobwheel::e2e

#endif  // JOBWHEEL_TESTS_CTL_CTL_STACK_TEST_H_
