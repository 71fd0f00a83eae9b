#include "sdk/internal/run_request.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sdk/internal/run_manager_test_util.h"

namespace jobwheel::sdk {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ValidateRunRequestTest, AcceptsAWellFormedRequest) {
  RunRequest r = Req(1, 7, "echo");
  r.set_shard_total(2);
  r.set_shard_index(1);
  EXPECT_TRUE(ValidateRunRequest(r).ok());
  RunRequest script = Req(2, 7, "");
  script.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL);
  script.set_script_source("exit 0");
  EXPECT_TRUE(ValidateRunRequest(script).ok());
  EXPECT_EQ(ValidateRunRequest(Req(1, 0, "echo")).message(), "job_id: must be positive");
}

TEST_F(RunManagerTest, InvalidRequestsNameTheField) {
  Make({{"echo", [](JobContext&) { return Result::Ok(); }}});
  auto check = [&](RunRequest r, const std::string& field) {
    auto outcome = manager_->Submit(r);
    ASSERT_FALSE(outcome.ok()) << field;
    EXPECT_EQ(outcome.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(outcome.status().message()), HasSubstr(field));
  };
  check(Req(0, 7, "echo"), "run_id");
  check(Req(1, 0, "echo"), "job_id");
  check(Req(1, 7, ""), "handler");
  RunRequest shard = Req(1, 7, "echo");
  shard.set_shard_total(2);
  shard.set_shard_index(2);
  check(shard, "shard_index");
  RunRequest timeout = Req(1, 7, "echo");
  timeout.mutable_timeout()->set_seconds(-1);
  check(timeout, "timeout");
  RunRequest script = Req(1, 7, "");
  script.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_PYTHON);
  check(script, "script_source");
  RunRequest glue = Req(1, 7, "echo");
  glue.set_glue_type(static_cast<jobwheel::v1::GlueType>(42));
  check(glue, "glue_type");
}

}  // namespace
}  // namespace jobwheel::sdk
