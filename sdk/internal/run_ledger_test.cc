#include "sdk/internal/run_ledger.h"

#include "gtest/gtest.h"

namespace jobwheel::sdk {
namespace {

using ::jobwheel::v1::RUN_DISPOSITION_DISCARDED;
using ::jobwheel::v1::RUN_STATUS_DISCARDED;
using ::jobwheel::v1::RUN_STATUS_SUCCEEDED;
using ::jobwheel::v1::RUN_STATUS_UNSPECIFIED;

TEST(RunLedgerTest, EndedKeepsAKnownStatus) {
  RunLedger ledger(10, 10);
  ledger.Ended(1, RUN_STATUS_SUCCEEDED, "ok");
  ledger.Ended(1, RUN_STATUS_UNSPECIFIED, "");
  auto e = ledger.Find(1);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, RunLedger::Kind::kEnded);
  EXPECT_EQ(e->status, RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(e->message, "ok");
  EXPECT_FALSE(ledger.Find(2).has_value());
}

TEST(RunLedgerTest, FenceWinsAndIsNeverTurnedIntoARun) {
  RunLedger ledger(10, 10);
  ledger.Fence(3);
  ledger.Ended(3, RUN_STATUS_SUCCEEDED, "ok");
  ledger.Refused(3, RUN_DISPOSITION_DISCARDED, "busy");
  auto e = ledger.Find(3);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, RunLedger::Kind::kFenced);
}

TEST(RunLedgerTest, RefusedRemembersItsAnswer) {
  RunLedger ledger(10, 10);
  ledger.Refused(4, RUN_DISPOSITION_DISCARDED, "busy");
  auto e = ledger.Find(4);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, RunLedger::Kind::kRefused);
  EXPECT_EQ(e->status, RUN_STATUS_DISCARDED);
  EXPECT_EQ(e->disposition, RUN_DISPOSITION_DISCARDED);
}

TEST(RunLedgerTest, BoundedAndFencesOutliveAFloodOfEndedRuns) {
  RunLedger ledger(/*recent_runs=*/3, /*fenced_runs=*/2);
  ledger.Fence(100);
  for (int64_t id = 1; id <= 50; ++id) ledger.Ended(id, RUN_STATUS_SUCCEEDED, "");
  EXPECT_EQ(ledger.size(), 4u);
  EXPECT_FALSE(ledger.Find(1).has_value());
  EXPECT_TRUE(ledger.Find(50).has_value());
  ASSERT_TRUE(ledger.Find(100).has_value());
  EXPECT_EQ(ledger.Find(100)->kind, RunLedger::Kind::kFenced);
  ledger.Fence(101);
  ledger.Fence(102);  // The least recently used fence (100, looked up before 101) goes.
  EXPECT_FALSE(ledger.Find(100).has_value());
  EXPECT_TRUE(ledger.Find(102).has_value());
}

TEST(RunLedgerTest, LargestForgottenIsTheLargestIdEvictedFromRecentRuns) {
  RunLedger ledger(/*recent_runs=*/2, /*fenced_runs=*/2);
  EXPECT_EQ(ledger.largest_forgotten(), 0);
  ledger.Ended(9, RUN_STATUS_SUCCEEDED, "");
  ledger.Ended(4, RUN_STATUS_SUCCEEDED, "");
  ledger.Ended(4, jobwheel::v1::RUN_STATUS_FAILED, "");  // Known: nothing is evicted.
  EXPECT_EQ(ledger.largest_forgotten(), 0);
  ledger.Ended(5, RUN_STATUS_SUCCEEDED, "");  // Evicts 9.
  ledger.Ended(6, RUN_STATUS_SUCCEEDED, "");  // Evicts 4: 9 stays the largest.
  EXPECT_EQ(ledger.largest_forgotten(), 9);
  ledger.Fence(100);  // Fences are not forgotten runs.
  ledger.Fence(101);
  ledger.Fence(102);
  EXPECT_EQ(ledger.largest_forgotten(), 9);
}

}  // namespace
}  // namespace jobwheel::sdk
