#ifndef JOBWHEEL_TESTS_SECURITY_DEMO_STACK_SUITE_H_
#define JOBWHEEL_TESTS_SECURITY_DEMO_STACK_SUITE_H_

#include <iostream>
#include <string>

#include "absl/status/status.h"
#include "common/testing/stack.h"
#include "gtest/gtest.h"

namespace jobwheel::security_testing {

using testing::Stack;

// A gtest fixture whose whole suite shares one stack (Stack::StartServices) and one demo
// executor of app "demo", registered with a per-app EXECUTOR API token (executor_token_).
class DemoStackSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stack_ = new Stack(Stack::Options{});
    setup_ = stack_->StartServices();
    if (!setup_.ok()) return;
    auto secret = stack_->CreateToken("exec-demo", jobwheel::v1::ROLE_EXECUTOR, {"demo"});
    if (!secret.ok()) {
      setup_ = secret.status();
      return;
    }
    executor_token_ = new std::string(*secret);
    setup_ = stack_->StartExecutor("demo", *executor_token_);
  }
  static void TearDownTestSuite() {
    delete stack_;
    delete executor_token_;
    stack_ = nullptr;
    executor_token_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(setup_.ok()) << setup_ << "\n" << stack_->Logs(); }
  void TearDown() override {
    if (HasFailure()) std::cerr << stack_->Logs();
  }

  static inline Stack* stack_ = nullptr;
  static inline std::string* executor_token_ = nullptr;
  static inline absl::Status setup_;
};

}  // namespace jobwheel::security_testing

#endif  // JOBWHEEL_TESTS_SECURITY_DEMO_STACK_SUITE_H_
