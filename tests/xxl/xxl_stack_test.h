#ifndef JOBWHEEL_TESTS_XXL_XXL_STACK_TEST_H_
#define JOBWHEEL_TESTS_XXL_XXL_STACK_TEST_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/testing/executions.h"
#include "common/testing/stack.h"
#include "jobwheel/v1/types.pb.h"
#include "tests/e2e/stack_test.h"

// The real stack plus the XXL gateway and XXL-protocol test executors
// (tests/xxl/xxl_test_executor.py) of app "xxl-demo", which has its own EXECUTOR token.
namespace jobwheel::xxl_test {

inline constexpr char kApp[] = "xxl-demo";

// The first of `n` consecutive ports that are free now (a gateway's --executor_ports).
int FreePortRange(int n);

struct XxlAdminAnswer {
  int code = 0;
  std::string msg;
};

class XxlStackTest : public e2e::StackTest {
 protected:
  std::vector<testing::Stack::ExecutorSpec> ExecutorSpecs() const override { return {}; }
  void SetUp() override;
  void TearDown() override;

  // (Re)starts the gateway on its ports and state dir; waits for its HTTP side.
  void StartGateway();
  // Starts XXL executor i (its own port, log dir, spool, executions file) with `token`
  // (empty: none), using the 2.x ("2") or 3.3+ ("3") envelope. Does not wait.
  void StartXxl(int i, const std::string& token, const std::string& envelope = "2",
                const std::string& app = kApp);
  // The base URL XXL executor i registers ("http://127.0.0.1:<port>").
  std::string XxlUrl(int i) const;
  // Waits until the registry lists XXL executor i online; returns its jobwheel address.
  absl::StatusOr<std::string> AwaitOnline(int i, absl::Duration timeout);
  // The jobwheel executor of app kApp standing for XXL executor i, if listed.
  absl::StatusOr<jobwheel::v1::Executor> Listed(int i);
  std::vector<testing::Execution> XxlExecutions(int i) const;
  // POSTs `body` to the gateway's admin path with `token` (empty: no header).
  XxlAdminAnswer AdminPost(const std::string& path, const std::string& body,
                           const std::string& token);
  jobwheel::v1::Job XxlJob(const std::string& name, const std::string& handler,
                           const std::string& param);

  std::string token_;  // EXECUTOR token of kApp.
  testing::StackProcess gateway_;
  int http_port_ = 0;
  int port_from_ = 0;
  std::vector<std::unique_ptr<testing::StackProcess>> xxl_;
  std::vector<int> xxl_ports_;
  // Further admin addresses XXL executors started from now on are given after the gateway's
  // (xxl.job.admin.addresses is a list: they register with the first that answers).
  std::vector<int> more_admin_ports_;
};

}  // namespace jobwheel::xxl_test

#endif  // JOBWHEEL_TESTS_XXL_XXL_STACK_TEST_H_
