#include "common/server/connection_admission.h"

#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(ConnectionAdmissionTest, CapsEachClientAndTheTotal) {
  ConnectionAdmission admission(/*max_connections=*/5, /*max_per_client=*/3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(admission.Admit("127.0.0.1").ok());
  absl::Status fourth = admission.Admit("127.0.0.1");
  EXPECT_TRUE(absl::IsResourceExhausted(fourth));
  EXPECT_NE(fourth.message().find("3 connections"), absl::string_view::npos);
  EXPECT_EQ(admission.open("127.0.0.1"), 3);

  // Another client is admitted while the first is at its cap, up to the total.
  EXPECT_TRUE(admission.Admit("127.0.0.2").ok());
  EXPECT_TRUE(admission.Admit("127.0.0.2").ok());
  absl::Status full = admission.Admit("127.0.0.3");
  EXPECT_TRUE(absl::IsResourceExhausted(full));
  EXPECT_NE(full.message().find("all 5"), absl::string_view::npos);
  EXPECT_EQ(admission.open(), 5);
}

TEST(ConnectionAdmissionTest, ReleaseMakesRoomAgain) {
  ConnectionAdmission admission(10, 1);
  EXPECT_TRUE(admission.Admit("::1").ok());
  EXPECT_FALSE(admission.Admit("::1").ok());
  admission.Release("::1");
  EXPECT_EQ(admission.open("::1"), 0);
  EXPECT_EQ(admission.open(), 0);
  EXPECT_TRUE(admission.Admit("::1").ok());
  admission.Release("never-admitted");  // Ignored.
  EXPECT_EQ(admission.open(), 1);
}

}  // namespace
}  // namespace jobwheel
