#ifndef JOBWHEEL_TESTS_SCHEDULER_STACK_TEST_H_
#define JOBWHEEL_TESTS_SCHEDULER_STACK_TEST_H_

#include <chrono>
#include <iostream>
#include <memory>

#include "absl/status/status.h"
#include "common/testing/client_context.h"
#include "common/testing/stack.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"

namespace jobwheel {

// A test of the scheduler against a Stack of real processes: StartStack starts its services
// and connects db_ to its database; TearDown stops it and prints its logs after a failure.
class SchedulerStackTest : public ::testing::Test {
 protected:
  // From SetUp, as ASSERT_NO_FATAL_FAILURE(StartStack(options)).
  void StartStack(const testing::Stack::Options& options) {
    stack_ = std::make_unique<testing::Stack>(options);
    const absl::Status s = stack_->StartServices();
    ASSERT_TRUE(s.ok()) << s << "\n" << stack_->Logs();
    db_ = std::make_unique<pqxx::connection>(stack_->dsn());
  }

  void TearDown() override {
    if (stack_ == nullptr) return;
    stack_->Stop();
    if (HasFailure()) std::cerr << stack_->Logs();
  }

  // An admin call's context: the stack's admin token, a 5 s deadline.
  std::unique_ptr<grpc::ClientContext> Ctx() {
    return ::jobwheel::testing::Ctx(stack_->admin_token(), absl::Seconds(5));
  }

  std::unique_ptr<testing::Stack> stack_;
  std::unique_ptr<pqxx::connection> db_;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_TESTS_SCHEDULER_STACK_TEST_H_
