#include "sdk/internal/run_results.h"

#include <memory>
#include <string>
#include <vector>

#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace jobwheel::sdk {
namespace {

class CollectingSink : public ResultSink {
 public:
  void Submit(const jobwheel::v1::RunResult& result) override { results.push_back(result); }
  std::vector<jobwheel::v1::RunResult> results;
};

std::shared_ptr<RunState> NewRun(int64_t run_id, const std::string& key) {
  auto run = std::make_shared<RunState>();
  run->request.set_run_id(run_id);
  run->request.set_result_key(key);
  return run;
}

// Every result carries its run's result key (from its RunRequest), whatever ended the run;
// the run log's lines never show it.
TEST(RunResultsTest, ResultsCarryTheRunsKey) {
  SimulatedClock clock;
  prometheus::Registry registry;
  ExecutorMetrics metrics(registry);
  CollectingSink sink;
  RunResults results(&sink, clock, metrics, "127.0.0.1:9999");
  const std::string key_a(32, '\x11');
  const std::string key_b(32, '\x22');

  auto done = NewRun(1, key_a);
  std::string ended;
  absl::optional<jobwheel::v1::RunResult> ok = results.Concluded(*done, Result::Ok("fine"), &ended);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->result_key(), key_a);
  EXPECT_EQ(ok->executor_address(), "127.0.0.1:9999");
  EXPECT_EQ(ended.find(key_a), std::string::npos);

  auto killed = NewRun(2, key_b);
  killed->token->Cancel(CancelReason::kKilled, "killed by admin");
  jobwheel::v1::RunResult k = results.Cancelled(*killed);
  EXPECT_EQ(k.status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_EQ(k.result_key(), key_b);

  results.Report({*ok, k});
  ASSERT_EQ(sink.results.size(), 2u);
  EXPECT_EQ(sink.results[0].result_key(), key_a);
  EXPECT_EQ(sink.results[1].result_key(), key_b);
}

}  // namespace
}  // namespace jobwheel::sdk
