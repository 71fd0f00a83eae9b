#include "sdk/internal/run_log_reader.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sdk/internal/log_segment.h"
#include "sdk/internal/run_log_test_util.h"

namespace jobwheel::sdk {
namespace {

using ::jobwheel::testing::Eventually;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

TEST_F(RunLogTest, PagesThroughFileAndBufferedLines) {
  auto file = store_.Create(7);
  ASSERT_TRUE(file.ok());
  for (int i = 1; i <= 15; ++i) (*file)->Append(absl::StrCat("line ", i));
  (*file)->Flush();
  for (int i = 16; i <= 25; ++i) (*file)->Append(absl::StrCat("line ", i));
  ASSERT_EQ(OnDisk(7).size(), 15u);
  auto p1 = store_.Read(7, 1, 10);
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(p1->lines.size(), 10u);
  EXPECT_EQ(p1->to_line, 10);
  EXPECT_FALSE(p1->eof);
  auto p2 = store_.Read(7, 11, 10);  // Across the file's end.
  ASSERT_TRUE(p2.ok());
  ASSERT_EQ(p2->lines.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_THAT(p2->lines[i], HasSubstr(absl::StrCat("line ", 11 + i)));
  EXPECT_EQ(p2->to_line, 20);
  EXPECT_FALSE(p2->eof);
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
  // A page ending exactly at the file's end, with buffered lines after it.
  auto at_file_end = store_.Read(7, 6, 10);
  ASSERT_TRUE(at_file_end.ok());
  EXPECT_EQ(at_file_end->to_line, 15);
  EXPECT_FALSE(at_file_end->eof);
  // The same pages once everything is written.
  (*file)->Close();
  auto closed = store_.Read(7, 11, 10);
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(closed->lines, p2->lines);
  EXPECT_EQ(closed->to_line, 20);
  EXPECT_FALSE(closed->eof);
}

TEST_F(RunLogTest, UnknownAndInvalidRuns) {
  EXPECT_EQ(store_.Read(12345, 1, 10).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_.Read(0, 1, 10).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.Read(-5, 1, 10).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.Create(0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RunLogTest, FindsLogsOfAnEarlierProcessOnLaterDays) {
  auto file = store_.Create(9);
  ASSERT_TRUE(file.ok());
  (*file)->Append("from yesterday");
  (*file)->Close();
  clock_.Advance(absl::Hours(24));
  RunLogStore fresh(dir_ + "/logs", clock_, ManualFlush());
  ASSERT_TRUE(fresh.Init().ok());
  auto page = fresh.Read(9, 1, 10);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(page->lines, ElementsAre(HasSubstr("from yesterday")));
}

TEST_F(RunLogTest, MaxRunIdSpansDaysSegmentsAndOldFormatFiles) {
  auto none = store_.MaxRunId();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, 0);
  for (int64_t id : {40, 7, 23}) {
    auto file = store_.Create(id);
    ASSERT_TRUE(file.ok());
    (*file)->Append("x");
    (*file)->Close();
  }
  clock_.Advance(absl::Hours(24));
  auto later = store_.Create(12);  // A smaller id on a later day.
  ASSERT_TRUE(later.ok());
  (*later)->Append("y");
  (*later)->Close();
  store_.FlushAll();
  RunLogStore fresh(dir_ + "/logs", clock_, ManualFlush());
  ASSERT_TRUE(fresh.Init().ok());
  auto max = fresh.MaxRunId();
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ(*max, 40);
  fs::create_directories(dir_ + "/logs/2026-03-08");
  std::ofstream(LegacyPath(55, "2026-03-08")) << "2026-03-09 10:00:00.000 a\n";
  max = fresh.MaxRunId();
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ(*max, 55);
}

TEST_F(RunLogTest, RefusesAPathThatResolvesOutsideTheLogDir) {
  const std::string outside = dir_ + "/secret.txt";
  std::ofstream(outside) << "secret\n";
  fs::create_directories(dir_ + "/logs/2026-03-10");
  ASSERT_EQ(::symlink(outside.c_str(), LegacyPath(77).c_str()), 0);
  auto page = store_.Read(77, 1, 10);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(page.status().message()), ::testing::Not(HasSubstr("secret")));

  // An open log of that run neither reads nor writes through the symlink.
  auto file = store_.Create(77);
  ASSERT_TRUE(file.ok());
  (*file)->Append("must not leave log_dir");
  EXPECT_EQ(store_.Read(77, 1, 10).status().code(), absl::StatusCode::kPermissionDenied);
  (*file)->Close();
  std::ifstream in(outside);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "secret\n");
}

TEST_F(RunLogTest, NeitherWritesNorReadsThroughASymlinkedDayFolder) {
  const std::string outside = dir_ + "/elsewhere";
  fs::create_directories(outside);
  fs::create_directory_symlink(outside, dir_ + "/logs/2026-03-10");
  auto file = store_.Create(78);
  ASSERT_TRUE(file.ok());
  (*file)->Append("must not leave log_dir");
  EXPECT_EQ(store_.Read(78, 1, 10).status().code(), absl::StatusCode::kPermissionDenied);
  (*file)->Close();  // The write fails (and is reported), the run does not.
  EXPECT_TRUE(fs::is_empty(outside));
  EXPECT_EQ(store_.Read(78, 1, 10).status().code(), absl::StatusCode::kNotFound);
}

// Read while another thread appends and flushes: every line shows once, with its number.
TEST(RunLogConcurrencyTest, ReadsNeverShowALineTwiceOrOutOfPlace) {
  const std::string dir = jobwheel::testing::TestTempDir("RunLogConcurrencyTest");
  RunLogOptions options;
  options.flush_bytes = 300;  // A write every few lines.
  options.background_flush = false;
  RunLogStore store(dir + "/logs", RealClock::Get(), options);
  ASSERT_TRUE(store.Init().ok());
  auto file = store.Create(81);
  ASSERT_TRUE(file.ok());
  constexpr int kLines = 10000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 1; i <= kLines; ++i) (*file)->Append(absl::StrCat("n=", i));
    done = true;
  });
  int reads = 0;
  bool consistent = true;
  while (consistent && (!done || reads == 0)) {
    auto page = store.Read(81, 1, 20000);
    ASSERT_TRUE(page.ok()) << page.status();
    for (size_t i = 0; i < page->lines.size(); ++i) {
      if (!absl::EndsWith(page->lines[i], absl::StrCat(" n=", i + 1))) {
        ADD_FAILURE() << "line " << i + 1 << ": " << page->lines[i];
        consistent = false;
        break;
      }
    }
    ++reads;
  }
  writer.join();
  auto page = store.Read(81, 1, 20000);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->lines.size(), static_cast<size_t>(kLines));
  EXPECT_TRUE(page->eof);
}

TEST(RunLogChunksTest, PagesAcrossChunkBoundaries) {
  const std::string dir = jobwheel::testing::TestTempDir("RunLogChunksTest") + "/logs";
  fs::remove_all(dir);
  FakeClock clock(absl::FromCivil(absl::CivilSecond(2026, 3, 10, 12, 0, 0), absl::UTCTimeZone()));
  RunLogOptions options = ManualFlush();
  options.flush_bytes = 90;  // "<24-char stamp>line NN\n" = 32 bytes: a chunk per 3 lines.
  RunLogStore store(dir, clock, options);
  ASSERT_TRUE(store.Init().ok());
  auto file = store.Create(9);
  ASSERT_TRUE(file.ok());
  auto other = store.Create(10);  // Its chunks sit between run 9's.
  ASSERT_TRUE(other.ok());
  for (int i = 10; i <= 34; ++i) {
    (*file)->Append(absl::StrCat("line ", i));
    (*other)->Append(absl::StrCat("other ", i));
  }
  // 8 chunks of 3 lines written, the 25th line still buffered.
  ASSERT_EQ(DiskLines(dir, 9).size(), 24u);
  std::vector<std::string> all;
  for (int i = 10; i <= 34; ++i) all.push_back(absl::StrCat("line ", i));
  auto check_pages = [&](const std::string& when) {
    for (int from = 1; from <= 27; ++from) {
      for (int max : {1, 2, 3, 4, 7, 30}) {
        auto page = store.Read(9, from, max);
        ASSERT_TRUE(page.ok()) << page.status();
        const int to = std::max(from - 1, std::min(25, from + max - 1));
        std::vector<std::string> want;
        for (int line = from; line <= to; ++line) want.push_back(all[line - 1]);
        ASSERT_EQ(Texts(page->lines), want) << when << " from " << from << " max " << max;
        EXPECT_EQ(page->from_line, from);
        EXPECT_EQ(page->to_line, to);
        EXPECT_EQ(page->eof, to >= 25) << when << " from " << from << " max " << max;
      }
    }
  };
  check_pages("open");
  (*file)->Close();
  check_pages("closed");
  (*other)->Close();
  auto others = store.Read(10, 1, 100);
  ASSERT_TRUE(others.ok());
  EXPECT_EQ(others->lines.size(), 25u);
  EXPECT_THAT(others->lines.front(), HasSubstr("other 10"));
}

TEST_F(RunLogTest, ReadsOldFormatPerRunFiles) {
  fs::create_directories(dir_ + "/logs/2026-03-08");
  std::ofstream(LegacyPath(55, "2026-03-08"))
      << "2026-03-09 10:00:00.000 a\n2026-03-09 10:00:00.000 b\n2026-03-09 10:00:00.000 c\n"
      << "2026-03-09 10:00:00.000 half";  // Still being written: left out.
  auto page = store_.Read(55, 1, 10);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Texts(page->lines), ElementsAre("a", "b", "c"));
  EXPECT_TRUE(page->eof);
  page = store_.Read(55, 2, 1);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(Texts(page->lines), ElementsAre("b"));
  EXPECT_FALSE(page->eof);
  page = store_.Read(55, 3, 1);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(Texts(page->lines), ElementsAre("c"));
  EXPECT_TRUE(page->eof);
  EXPECT_EQ(store_.Read(56, 1, 10).status().code(), absl::StatusCode::kNotFound);
  // Cleanup removes old-format folders too.
  EXPECT_EQ(store_.Cleanup(1), 1);
  EXPECT_EQ(store_.Read(55, 1, 10).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RunLogTest, IgnoresATornIndexTailAndRecordsPastTheData) {
  for (int64_t id : {1, 2}) {
    auto file = store_.Create(id);
    ASSERT_TRUE(file.ok());
    (*file)->Append(absl::StrCat("run ", id));
    (*file)->Close();
  }
  const std::string day = dir_ + "/logs/2026-03-10";
  const auto data_size = static_cast<int64_t>(fs::file_size(day + "/seg-1.log"));
  {
    // A crash: the index got a record whose chunk never reached the data file, and half of
    // the next record.
    std::ofstream idx(day + "/seg-1.idx", std::ios::app | std::ios::binary);
    idx << EncodeIndexRecord({1, data_size, 50, 0});
    idx << EncodeIndexRecord({2, 0, 10, 0}).substr(0, 20);
  }
  std::ofstream(day + "/seg-2.idx", std::ios::binary) << std::string(333, '\x7f');
  std::ofstream(day + "/seg-2.log", std::ios::binary) << "garbage";
  RunLogStore restarted(dir_ + "/logs", clock_, ManualFlush());
  ASSERT_TRUE(restarted.Init().ok());
  for (int64_t id : {1, 2}) {
    auto page = restarted.Read(id, 1, 10);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_THAT(Texts(page->lines), ElementsAre(absl::StrCat("run ", id)));
    EXPECT_TRUE(page->eof);
  }
  EXPECT_EQ(restarted.Read(3, 1, 10).status().code(), absl::StatusCode::kNotFound);
  auto file = restarted.Create(3);
  ASSERT_TRUE(file.ok());
  (*file)->Append("run 3");
  (*file)->Close();
  EXPECT_TRUE(fs::exists(day + "/seg-3.log"));
  EXPECT_THAT(DiskLines(dir_ + "/logs", 3), ElementsAre(HasSubstr("run 3")));
}

}  // namespace
}  // namespace jobwheel::sdk
