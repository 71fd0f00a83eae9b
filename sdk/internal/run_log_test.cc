#include "sdk/internal/run_log.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/testing/process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwheel::sdk {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class RunLogTest : public ::testing::Test {
 protected:
  RunLogTest()
      : dir_(jobwheel::testing::TestTempDir(
            ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        clock_(absl::FromCivil(absl::CivilSecond(2026, 3, 10, 12, 0, 0), absl::UTCTimeZone())),
        store_(dir_ + "/logs", clock_) {}
  void SetUp() override { ASSERT_TRUE(store_.Init().ok()); }

  std::string dir_;
  FakeClock clock_;
  RunLogStore store_;
};

TEST_F(RunLogTest, WritesTimestampedLinesIntoTheDayFolder) {
  auto file = store_.Create(42);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->path(), std::filesystem::canonical(dir_ + "/logs").string() +
                                 "/2026-03-10/42.log");
  (*file)->Append("first\nsecond");
  auto page = store_.Read(42, 1, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(page->lines, ElementsAre("2026-03-10 12:00:00.000 first",
                                       "2026-03-10 12:00:00.000 second"));
  EXPECT_EQ(page->from_line, 1);
  EXPECT_EQ(page->to_line, 2);
  EXPECT_TRUE(page->eof);
}

TEST_F(RunLogTest, TellsWhetherItCreatedTheFileAndRemovesOnRequest) {
  bool created = false;
  auto first = store_.Create(7, &created);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(created);
  (*first)->Append("kept");
  auto again = store_.Create(7, &created);  // Reopened for appending, not truncated.
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(created);
  auto page = store_.Read(7, 1, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->lines.size(), 1u);
  store_.Remove(7);
  EXPECT_EQ(store_.Read(7, 1, 10).status().code(), absl::StatusCode::kNotFound);
  // A new day's folder is made when the clock gets there.
  clock_.Advance(absl::Hours(24));
  auto next_day = store_.Create(8, &created);
  ASSERT_TRUE(next_day.ok());
  EXPECT_TRUE(created);
  EXPECT_THAT((*next_day)->path(), HasSubstr("/2026-03-11/8.log"));
}

TEST_F(RunLogTest, PagesThroughTheLog) {
  auto file = store_.Create(7);
  ASSERT_TRUE(file.ok());
  for (int i = 1; i <= 25; ++i) (*file)->Append(absl::StrCat("line ", i));
  auto p1 = store_.Read(7, 1, 10);
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(p1->lines.size(), 10u);
  EXPECT_EQ(p1->to_line, 10);
  EXPECT_FALSE(p1->eof);
  auto p3 = store_.Read(7, 21, 10);
  ASSERT_TRUE(p3.ok());
  EXPECT_EQ(p3->lines.size(), 5u);
  EXPECT_THAT(p3->lines.front(), HasSubstr("line 21"));
  EXPECT_EQ(p3->from_line, 21);
  EXPECT_EQ(p3->to_line, 25);
  EXPECT_TRUE(p3->eof);
  auto beyond = store_.Read(7, 100, 10);
  ASSERT_TRUE(beyond.ok());
  EXPECT_TRUE(beyond->lines.empty());
  EXPECT_EQ(beyond->to_line, 99);
  EXPECT_TRUE(beyond->eof);
  // Exactly at the end: the page is full and reaches EOF.
  auto exact = store_.Read(7, 16, 10);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->to_line, 25);
  EXPECT_TRUE(exact->eof);
}

TEST_F(RunLogTest, UnknownAndInvalidRuns) {
  EXPECT_EQ(store_.Read(12345, 1, 10).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_.Read(0, 1, 10).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.Read(-5, 1, 10).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RunLogTest, FindsLogsOfAnEarlierProcessOnLaterDays) {
  auto file = store_.Create(9);
  ASSERT_TRUE(file.ok());
  (*file)->Append("from yesterday");
  clock_.Advance(absl::Hours(24));
  RunLogStore fresh(dir_ + "/logs", clock_);
  ASSERT_TRUE(fresh.Init().ok());
  auto page = fresh.Read(9, 1, 10);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(page->lines, ElementsAre(HasSubstr("from yesterday")));
}

TEST_F(RunLogTest, RefusesAPathThatResolvesOutsideTheLogDir) {
  const std::string outside = dir_ + "/secret.txt";
  std::ofstream(outside) << "secret\n";
  std::filesystem::create_directories(dir_ + "/logs/2026-03-10");
  ASSERT_EQ(::symlink(outside.c_str(), (dir_ + "/logs/2026-03-10/77.log").c_str()), 0);
  auto page = store_.Read(77, 1, 10);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(page.status().message()), ::testing::Not(HasSubstr("secret")));
}

TEST_F(RunLogTest, CleanupRemovesOldDayFoldersOnly) {
  ASSERT_TRUE(store_.Create(1).ok());  // 2026-03-10
  clock_.Advance(absl::Hours(24 * 3));
  ASSERT_TRUE(store_.Create(2).ok());  // 2026-03-13
  std::filesystem::create_directories(dir_ + "/logs/scripts");
  std::filesystem::create_directories(dir_ + "/logs/not-a-date");
  EXPECT_EQ(store_.Cleanup(0), 0);
  EXPECT_EQ(store_.Cleanup(5), 0);
  EXPECT_EQ(store_.Cleanup(2), 1);  // Keeps 03-11 and later.
  EXPECT_EQ(store_.Read(1, 1, 10).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_.Read(2, 1, 10).ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/logs/scripts"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/logs/not-a-date"));
}

}  // namespace
}  // namespace jobwheel::sdk
