#include "services/dispatcher/request_validation.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwheel::dispatcher {
namespace {

using ::testing::HasSubstr;

v1::Fire ValidFire(int64_t id) {
  v1::Fire f;
  f.set_fire_id(id);
  f.mutable_job()->set_id(7);
  f.mutable_job()->set_app("demo");
  f.mutable_job()->set_handler("echo");
  return f;
}

void ExpectInvalid(const absl::Status& s, const std::string& field) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(field));
}

TEST(RequestValidationTest, DispatchRequestsNameTheField) {
  const RequestLimits limits;
  v1::DispatchRequest req;
  *req.add_fires() = ValidFire(1);
  *req.add_fires() = ValidFire(2);
  EXPECT_TRUE(ValidateDispatchRequest(req, limits).ok());
  EXPECT_TRUE(ValidateDispatchRequest(v1::DispatchRequest(), limits).ok());

  req.mutable_fires(1)->mutable_job()->clear_app();
  ExpectInvalid(ValidateDispatchRequest(req, limits), "fires[1].job.app");

  v1::DispatchRequest shard;
  *shard.add_fires() = ValidFire(1);
  shard.mutable_fires(0)->set_shard_total(2);
  shard.mutable_fires(0)->set_shard_index(2);
  ExpectInvalid(ValidateDispatchRequest(shard, limits), "fires[0].shard_index");

  auto one = [&](auto change, const std::string& field) {
    v1::DispatchRequest r;
    *r.add_fires() = ValidFire(1);
    change(*r.mutable_fires(0));
    ExpectInvalid(ValidateDispatchRequest(r, limits), field);
  };
  one([](v1::Fire& f) { f.set_fire_id(0); }, "fires[0].fire_id");
  one([](v1::Fire& f) { f.mutable_job()->set_id(-1); }, "fires[0].job.id");
  one([](v1::Fire& f) { f.clear_job(); }, "fires[0].job.id");
  one([](v1::Fire& f) { f.mutable_job()->clear_handler(); }, "fires[0].job.handler");
  one([](v1::Fire& f) { f.set_shard_total(-1); }, "fires[0].shard_index");
  one([](v1::Fire& f) { f.set_attempt(-1); }, "fires[0].attempt");

  // A script needs no handler.
  v1::DispatchRequest script;
  *script.add_fires() = ValidFire(1);
  script.mutable_fires(0)->mutable_job()->clear_handler();
  script.mutable_fires(0)->mutable_job()->set_glue_type(v1::GLUE_TYPE_SCRIPT_SHELL);
  EXPECT_TRUE(ValidateDispatchRequest(script, limits).ok());
}

TEST(RequestValidationTest, DispatchRequestsAreLimitedInSize) {
  RequestLimits limits;
  limits.max_fires_per_call = 2;
  v1::DispatchRequest req;
  for (int i = 1; i <= 3; ++i) *req.add_fires() = ValidFire(i);
  ExpectInvalid(ValidateDispatchRequest(req, limits), "fires: at most 2 per call, got 3");
}

TEST(RequestValidationTest, ReportResultsRequestsNameTheField) {
  RequestLimits limits;
  v1::ReportResultsRequest results;
  results.add_results()->set_run_id(1);
  results.mutable_results(0)->set_status(v1::RUN_STATUS_SUCCEEDED);
  EXPECT_TRUE(ValidateReportResultsRequest(results, limits).ok());
  results.add_results()->set_run_id(2);
  results.mutable_results(1)->set_status(v1::RUN_STATUS_RUNNING);
  ExpectInvalid(ValidateReportResultsRequest(results, limits), "results[1].status");
  results.mutable_results(1)->set_status(v1::RUN_STATUS_DISCARDED);
  EXPECT_TRUE(ValidateReportResultsRequest(results, limits).ok());
  results.mutable_results(1)->set_run_id(0);
  ExpectInvalid(ValidateReportResultsRequest(results, limits), "results[1].run_id");

  limits.max_results_per_call = 1;
  results.mutable_results(1)->set_run_id(2);
  ExpectInvalid(ValidateReportResultsRequest(results, limits), "results: at most 1 per call");
}

}  // namespace
}  // namespace jobwheel::dispatcher
