#include "services/console/connect_error.h"

#include "gtest/gtest.h"

namespace jobwheel::console {
namespace {

TEST(ConnectErrorTest, EveryCodeHasTheSpecsNameAndHttpStatus) {
  struct Row {
    absl::StatusCode code;
    const char* name;
    int http;
  };
  // The Connect protocol's "Error Codes" table.
  const Row rows[] = {
      {absl::StatusCode::kCancelled, "canceled", 499},
      {absl::StatusCode::kUnknown, "unknown", 500},
      {absl::StatusCode::kInvalidArgument, "invalid_argument", 400},
      {absl::StatusCode::kDeadlineExceeded, "deadline_exceeded", 504},
      {absl::StatusCode::kNotFound, "not_found", 404},
      {absl::StatusCode::kAlreadyExists, "already_exists", 409},
      {absl::StatusCode::kPermissionDenied, "permission_denied", 403},
      {absl::StatusCode::kResourceExhausted, "resource_exhausted", 429},
      {absl::StatusCode::kFailedPrecondition, "failed_precondition", 400},
      {absl::StatusCode::kAborted, "aborted", 409},
      {absl::StatusCode::kOutOfRange, "out_of_range", 400},
      {absl::StatusCode::kUnimplemented, "unimplemented", 501},
      {absl::StatusCode::kInternal, "internal", 500},
      {absl::StatusCode::kUnavailable, "unavailable", 503},
      {absl::StatusCode::kDataLoss, "data_loss", 500},
      {absl::StatusCode::kUnauthenticated, "unauthenticated", 401},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(ConnectCodeName(row.code), row.name) << row.name;
    EXPECT_EQ(ConnectHttpStatus(row.code), row.http) << row.name;
  }
  EXPECT_EQ(ConnectHttpStatus(absl::StatusCode::kOk), 200);
  EXPECT_EQ(ConnectCodeName(static_cast<absl::StatusCode>(99)), "unknown");
  EXPECT_EQ(ConnectHttpStatus(static_cast<absl::StatusCode>(99)), 500);
}

TEST(ConnectErrorTest, BodyEscapesTheMessage) {
  EXPECT_EQ(ConnectErrorJson(absl::InvalidArgumentError("job \"a\\b\"\n\x01")),
            R"({"code":"invalid_argument","message":"job \"a\\b\"\n\u0001"})");
}

TEST(ConnectErrorTest, EmptyMessageIsLeftOut) {
  EXPECT_EQ(ConnectErrorJson(absl::UnauthenticatedError("")), R"({"code":"unauthenticated"})");
}

TEST(ConnectErrorTest, OkIsNotAnErrorCodeSoItReadsUnknown) {
  EXPECT_EQ(ConnectErrorJson(absl::OkStatus()), R"({"code":"unknown"})");
}

}  // namespace
}  // namespace jobwheel::console
