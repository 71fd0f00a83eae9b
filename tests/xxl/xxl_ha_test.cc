// Two XXL gateways serving the same XXL executors (xxl.job.admin.addresses = A,B): the
// executors register with A, the first that answers; A is killed with kill -9 in the middle of
// a run. The executors move to B at their next registry call, their runs in flight end (LOST,
// then retried), no run id is executed twice on any executor, and new runs go through B.
#include <algorithm>
#include <iostream>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "gtest/gtest.h"
#include "tests/xxl/xxl_stack_test.h"

namespace jobwheel::xxl_test {
namespace {

namespace v1 = jobwheel::v1;
using testing::Eventually;
using testing::Starts;

bool Ended(const v1::Run& r) {
  return r.status() != v1::RUN_STATUS_RUNNING && r.status() != v1::RUN_STATUS_PENDING;
}

class XxlHaTest : public XxlStackTest {
 protected:
  void SetUp() override {
    XxlStackTest::SetUp();
    if (HasFatalFailure()) return;
    // Gateway B: the same flags on its own HTTP port, executor ports and state.
    b_http_port_ = testing::PickFreePort();
    b_port_from_ = FreePortRange(4);
    gateway_b_.name = "xxl_gateway_b";
    gateway_b_.binary = gateway_.binary;
    gateway_b_.serves = false;
    gateway_b_.port = b_http_port_;
    gateway_b_.args = gateway_.args;
    for (std::string& a : gateway_b_.args) {
      if (absl::StartsWith(a, "--listen_http=")) {
        a = absl::StrCat("--listen_http=127.0.0.1:", b_http_port_);
      } else if (absl::StartsWith(a, "--executor_ports=")) {
        a = absl::StrCat("--executor_ports=", b_port_from_, "-", b_port_from_ + 3);
      } else if (absl::StartsWith(a, "--state_dir=")) {
        a = "--state_dir=" + stack_->dir() + "/xxl-state-b";
      }
    }
    ASSERT_TRUE(stack_->Start(gateway_b_).ok());
    more_admin_ports_ = {b_http_port_};
  }
  void TearDown() override {
    testing::Stack::StopProcess(gateway_b_);
    if (HasFailure()) std::cerr << "---- gateway b\n" << testing::ReadFile(gateway_b_.log);
    XxlStackTest::TearDown();
  }
  // Whether XXL executor i is listed on one of gateway B's ports.
  bool OnB(int i) {
    auto e = Listed(i);
    if (!e.ok()) return false;
    const std::string& a = e->address();
    const int port = std::stoi(a.substr(a.rfind(':') + 1));
    return port >= b_port_from_ && port <= b_port_from_ + 3;
  }

  testing::StackProcess gateway_b_;
  int b_http_port_ = 0;
  int b_port_from_ = 0;
};

TEST_F(XxlHaTest, KillNineOfTheActiveGatewayMovesTheExecutorsToTheOtherAndNothingRunsTwice) {
  StartXxl(0, token_);
  StartXxl(1, token_);
  ASSERT_TRUE(AwaitOnline(0, absl::Seconds(20)).ok());
  ASSERT_TRUE(AwaitOnline(1, absl::Seconds(20)).ok());
  ASSERT_FALSE(OnB(0));  // A answered first.
  v1::Job spec = XxlJob("ha", "sleep", "4000");
  spec.set_routing_strategy(v1::ROUTING_STRATEGY_ROUND);
  spec.set_fail_retry_count(2);
  auto job = CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(TriggerJob(job->id()).ok());
  ASSERT_TRUE(Eventually(
      [&] {
        return !Starts(XxlExecutions(0), job->id()).empty() ||
               !Starts(XxlExecutions(1), job->id()).empty();
      },
      absl::Seconds(15)));

  testing::Stack::KillProcess(gateway_);  // kill -9 of the gateway the executors use.
  // Their next registry call (every 2 s here, 30 s in XXL-JOB) finds A gone and B answering.
  ASSERT_TRUE(Eventually([&] { return OnB(0) && OnB(1); }, absl::Seconds(20)))
      << "the executors did not move to gateway B";
  // The run in flight ends (LOST: its gateway's stream closed); every run of the job ends.
  ASSERT_TRUE(Eventually(
      [&] {
        std::vector<v1::Run> runs = Runs(job->id());
        return !runs.empty() && std::all_of(runs.begin(), runs.end(), Ended);
      },
      absl::Seconds(40)))
      << "a run of the job did not end";
  EXPECT_EQ(Runs(job->id())[0].status(), v1::RUN_STATUS_LOST);

  // New runs go through B and succeed.
  ASSERT_TRUE(TriggerJob(job->id()).ok());
  ASSERT_TRUE(Eventually(
      [&] {
        std::vector<v1::Run> runs = Runs(job->id());
        return std::any_of(runs.begin(), runs.end(),
                           [](const v1::Run& r) { return r.status() == v1::RUN_STATUS_SUCCEEDED; });
      },
      absl::Seconds(30)))
      << "no run of the job succeeded through gateway B";

  // Counted on the XXL executors: no run id started twice, on one executor or across both.
  std::map<int64_t, int> starts;
  for (int i = 0; i < 2; ++i) {
    for (const testing::Execution& e : Starts(XxlExecutions(i), job->id())) ++starts[e.run_id];
  }
  ASSERT_FALSE(starts.empty());
  for (const auto& [run, n] : starts) EXPECT_EQ(n, 1) << "run " << run << " started " << n;
}

}  // namespace
}  // namespace jobwheel::xxl_test
