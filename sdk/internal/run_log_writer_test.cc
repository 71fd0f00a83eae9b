#include "sdk/internal/run_log_writer.h"

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

TEST_F(RunLogTest, BuffersTimestampedLinesUntilCloseThenWritesThemIntoTheDayFolder) {
  auto file = store_.Create(42);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->day(), "2026-03-10");
  (*file)->Append("first\nsecond");
  clock_.Advance(absl::Milliseconds(5));
  (*file)->Append("third\n");
  // Nothing on disk yet (not even the day folder), but Read sees the lines.
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/logs/2026-03-10"));
  auto page = store_.Read(42, 1, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(page->lines,
              ElementsAre("2026-03-10 12:00:00.000 first", "2026-03-10 12:00:00.000 second",
                          "2026-03-10 12:00:00.005 third"));
  EXPECT_EQ(page->from_line, 1);
  EXPECT_EQ(page->to_line, 3);
  EXPECT_TRUE(page->eof);

  (*file)->Close();
  EXPECT_THAT(OnDisk(42),
              ElementsAre("2026-03-10 12:00:00.000 first", "2026-03-10 12:00:00.000 second",
                          "2026-03-10 12:00:00.005 third"));
  // One chunk in the day's segment, one record in its index.
  EXPECT_THAT(Files(dir_ + "/logs"), ElementsAre("2026-03-10/seg-1.idx", "2026-03-10/seg-1.log"));
  EXPECT_EQ(fs::file_size(dir_ + "/logs/2026-03-10/seg-1.idx"), IndexRecord::kSize);
  page = store_.Read(42, 2, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(page->lines, ElementsAre(HasSubstr("second"), HasSubstr("third")));
  EXPECT_EQ(page->from_line, 2);
  EXPECT_EQ(page->to_line, 3);
  EXPECT_TRUE(page->eof);

  // A line appended after Close (a handler's stray thread) is written at once.
  (*file)->Append("late");
  EXPECT_EQ(OnDisk(42).size(), 4u);
  EXPECT_THAT(ReadAll(42), ElementsAre(HasSubstr("first"), HasSubstr("second"), HasSubstr("third"),
                                       HasSubstr("late")));
}

TEST_F(RunLogTest, FlushesAnIntervalAfterTheFirstUnwrittenLine) {
  auto file = store_.Create(5);
  ASSERT_TRUE(file.ok());
  (*file)->Append("one");
  clock_.Advance(absl::Milliseconds(150));
  (*file)->Append("two");
  clock_.Advance(absl::Milliseconds(49));
  EXPECT_EQ(store_.FlushDue(), 0);  // 199 ms after "one".
  EXPECT_THAT(OnDisk(5), ElementsAre("<absent>"));
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(store_.FlushDue(), 1);
  EXPECT_THAT(OnDisk(5), ElementsAre(HasSubstr("one"), HasSubstr("two")));
  EXPECT_EQ(store_.FlushDue(), 0);  // Nothing left to write.

  // The next line starts a new interval; Read numbers the written lines, then buffered ones.
  (*file)->Append("three");
  auto page = store_.Read(5, 2, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(page->lines, ElementsAre(HasSubstr("two"), HasSubstr("three")));
  EXPECT_EQ(page->from_line, 2);
  EXPECT_EQ(page->to_line, 3);
  EXPECT_TRUE(page->eof);
  clock_.Advance(kInterval - absl::Milliseconds(1));
  EXPECT_EQ(store_.FlushDue(), 0);
  EXPECT_EQ(OnDisk(5).size(), 2u);
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(store_.FlushDue(), 1);
  EXPECT_THAT(OnDisk(5), ElementsAre(HasSubstr("one"), HasSubstr("two"), HasSubstr("three")));
  EXPECT_THAT(ReadAll(5), ElementsAre(HasSubstr("one"), HasSubstr("two"), HasSubstr("three")));
}

TEST_F(RunLogTest, AClosedLogIsNotWrittenAgainByItsQueuedFlush) {
  auto file = store_.Create(6);
  ASSERT_TRUE(file.ok());
  (*file)->Append("only");
  (*file)->Close();
  clock_.Advance(kInterval);
  EXPECT_EQ(store_.FlushDue(), 0);
  EXPECT_THAT(OnDisk(6), ElementsAre(HasSubstr("only")));
  EXPECT_EQ(fs::file_size(dir_ + "/logs/2026-03-10/seg-1.idx"), IndexRecord::kSize);
}

TEST(RunLogSizeTest, FlushesWhenTheBufferIsFull) {
  const std::string dir = jobwheel::testing::TestTempDir("RunLogSizeTest");
  FakeClock clock(absl::FromCivil(absl::CivilSecond(2026, 3, 10, 12, 0, 0), absl::UTCTimeZone()));
  RunLogOptions options = ManualFlush();
  options.flush_bytes = 1000;
  RunLogStore store(dir + "/logs", clock, options);
  ASSERT_TRUE(store.Init().ok());
  auto file = store.Create(3);
  ASSERT_TRUE(file.ok());
  const std::string text(76, 'x');  // 24 + 76 + 1 = 101 bytes per line.
  for (int i = 0; i < 9; ++i) (*file)->Append(text);
  EXPECT_THAT(DiskLines(dir + "/logs", 3), ElementsAre("<absent>"));  // 909 bytes buffered.
  (*file)->Append(text);                                              // 1010 bytes: written.
  EXPECT_EQ(DiskLines(dir + "/logs", 3).size(), 10u);
  (*file)->Append("after");
  EXPECT_EQ(DiskLines(dir + "/logs", 3).size(), 10u);
  auto page = store.Read(3, 10, 5);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(page->lines, ElementsAre(HasSubstr("xxx"), HasSubstr("after")));
  EXPECT_EQ(page->to_line, 11);
  EXPECT_TRUE(page->eof);
}

TEST_F(RunLogTest, ReturnsTheOpenLogAndDiscardsItOnRemove) {
  bool created = false;
  auto first = store_.Create(7, &created);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(created);
  (*first)->Append("kept");
  auto again = store_.Create(7, &created);  // The same open log, not a second one.
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(created);
  EXPECT_EQ(first->get(), again->get());
  EXPECT_EQ(ReadAll(7).size(), 1u);
  store_.Remove(7);
  EXPECT_EQ(store_.Read(7, 1, 10).status().code(), absl::StatusCode::kNotFound);
  (*first)->Append("ignored");
  (*first)->Flush();
  EXPECT_THAT(Files(dir_ + "/logs"), ::testing::IsEmpty());
  // A new day's folder is used when the clock gets there.
  clock_.Advance(absl::Hours(24));
  auto next_day = store_.Create(8, &created);
  ASSERT_TRUE(next_day.ok());
  EXPECT_TRUE(created);
  EXPECT_EQ((*next_day)->day(), "2026-03-11");
  (*next_day)->Append("x");
  (*next_day)->Close();
  EXPECT_THAT(Files(dir_ + "/logs"), ElementsAre("2026-03-11/seg-1.idx", "2026-03-11/seg-1.log"));
}

TEST_F(RunLogTest, RefusedRunLeavesNoFile) {
  bool created = false;
  auto file = store_.Create(11, &created);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE(created);
  store_.Remove(11);
  file->reset();  // The refused run drops its log.
  clock_.Advance(kInterval * 2);
  store_.FlushAll();
  EXPECT_EQ(store_.FlushDue(), 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/logs/2026-03-10"));
  EXPECT_EQ(store_.Read(11, 1, 10).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RunLogTest, RemoveDiscardsWhatItsLogWroteButNotAnEarlierProcesssLines) {
  {
    // An earlier process's chunks of run 14 (this store writes a segment after its one).
    RunLogStore earlier(dir_ + "/logs", clock_, ManualFlush());
    ASSERT_TRUE(earlier.Init().ok());
    auto log = earlier.Create(14);
    ASSERT_TRUE(log.ok());
    (*log)->Append("earlier process");
    (*log)->Close();
  }
  auto written = store_.Create(12);
  ASSERT_TRUE(written.ok());
  (*written)->Append("flushed already");
  (*written)->Flush();
  ASSERT_EQ(OnDisk(12).size(), 1u);
  store_.Remove(12);
  EXPECT_EQ(store_.Read(12, 1, 10).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(OnDisk(12), ElementsAre("<absent>"));  // The tombstone is on disk.

  // An old-format file of the run.
  fs::create_directories(dir_ + "/logs/2026-03-10");
  std::ofstream(LegacyPath(13)) << "2026-03-10 11:00:00.000 earlier process\n";
  auto reopened = store_.Create(13);
  ASSERT_TRUE(reopened.ok());
  (*reopened)->Append("this process");
  EXPECT_THAT(ReadAll(13), ElementsAre(HasSubstr("earlier process"), HasSubstr("this process")));
  (*reopened)->Flush();
  EXPECT_THAT(OnDisk(13), ElementsAre(HasSubstr("earlier process"), HasSubstr("this process")));
  store_.Remove(13);
  EXPECT_THAT(ReadAll(13), ElementsAre(HasSubstr("earlier process")));
  EXPECT_THAT(OnDisk(13), ElementsAre(HasSubstr("earlier process")));

  auto again = store_.Create(14);
  ASSERT_TRUE(again.ok());
  (*again)->Append("this process");
  (*again)->Flush();
  EXPECT_THAT(ReadAll(14), ElementsAre(HasSubstr("earlier process"), HasSubstr("this process")));
  store_.Remove(14);
  EXPECT_THAT(ReadAll(14), ElementsAre(HasSubstr("earlier process")));
}

TEST_F(RunLogTest, CleanupRemovesOldDayFoldersOnly) {
  for (int64_t id : {1, 2}) {
    auto file = store_.Create(id);  // 2026-03-10, then 2026-03-13.
    ASSERT_TRUE(file.ok());
    (*file)->Append("x");
    (*file)->Close();
    clock_.Advance(absl::Hours(24 * 3));
  }
  clock_.Advance(-absl::Hours(24 * 3));
  std::filesystem::create_directories(dir_ + "/logs/scripts");
  std::filesystem::create_directories(dir_ + "/logs/not-a-date");
  EXPECT_EQ(store_.Cleanup(0), 0);
  EXPECT_EQ(store_.Cleanup(5), 0);
  EXPECT_EQ(store_.Cleanup(2), 1);  // Keeps 03-11 and later.
  EXPECT_FALSE(fs::exists(dir_ + "/logs/2026-03-10"));
  EXPECT_EQ(store_.Read(1, 1, 10).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_.Read(2, 1, 10).ok());
  EXPECT_THAT(Files(dir_ + "/logs"), ElementsAre("2026-03-13/seg-1.idx", "2026-03-13/seg-1.log"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/logs/scripts"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/logs/not-a-date"));
}

TEST_F(RunLogTest, RemakesADayFolderRemovedMeanwhile) {
  auto file = store_.Create(21);
  ASSERT_TRUE(file.ok());
  (*file)->Append("before");
  (*file)->Close();
  fs::remove_all(dir_ + "/logs/2026-03-10");
  (*file)->Append("after");
  EXPECT_THAT(OnDisk(21), ElementsAre(HasSubstr("after")));
}

TEST_F(RunLogTest, ShutdownWritesEverythingAndLaterLinesAtOnce) {
  auto file = store_.Create(31);
  ASSERT_TRUE(file.ok());
  (*file)->Append("buffered");
  store_.Shutdown();
  EXPECT_THAT(OnDisk(31), ElementsAre(HasSubstr("buffered")));
  (*file)->Append("after shutdown");
  EXPECT_THAT(OnDisk(31), ElementsAre(HasSubstr("buffered"), HasSubstr("after shutdown")));
  store_.Shutdown();  // Idempotent.
}

TEST_F(RunLogTest, ALogOutlivesItsStore) {
  std::shared_ptr<RunLogFile> file;
  {
    RunLogStore store(dir_ + "/other", clock_, ManualFlush());
    ASSERT_TRUE(store.Init().ok());
    auto made = store.Create(41);
    ASSERT_TRUE(made.ok());
    file = *made;
    file->Append("first");
  }
  EXPECT_THAT(DiskLines(dir_ + "/other", 41), ElementsAre(HasSubstr("first")));
  file->Append("second");  // A stuck handler's thread, after the executor shut down.
  EXPECT_THAT(DiskLines(dir_ + "/other", 41), ElementsAre(HasSubstr("first"), HasSubstr("second")));
  file.reset();
}

TEST_F(RunLogTest, DestroyingAnUnclosedLogWritesItsLines) {
  auto file = store_.Create(51);
  ASSERT_TRUE(file.ok());
  (*file)->Append("unclosed");
  file->reset();
  EXPECT_THAT(OnDisk(51), ElementsAre(HasSubstr("unclosed")));
  EXPECT_THAT(ReadAll(51), ElementsAre(HasSubstr("unclosed")));
}

TEST_F(RunLogTest, ZeroIntervalWritesEachLineAtOnce) {
  RunLogOptions options = ManualFlush();
  options.flush_interval = absl::ZeroDuration();
  RunLogStore store(dir_ + "/direct", clock_, options);
  ASSERT_TRUE(store.Init().ok());
  auto file = store.Create(61);
  ASSERT_TRUE(file.ok());
  (*file)->Append("now");
  EXPECT_THAT(DiskLines(dir_ + "/direct", 61), ElementsAre(HasSubstr("now")));
}

// The background flusher writes a log once the (fake) clock passes its due time.
class RunLogFlusherTest : public RunLogTest {
 protected:
  static RunLogOptions Background() {
    RunLogOptions options = ManualFlush();
    options.background_flush = true;
    return options;
  }
  RunLogFlusherTest() : RunLogTest(Background()) {}
};

TEST_F(RunLogFlusherTest, WritesWithinTheInterval) {
  auto file = store_.Create(71);
  ASSERT_TRUE(file.ok());
  (*file)->Append("long run, first line");
  clock_.AwaitWaiters(1);  // The flusher waits for the line's due time.
  clock_.Advance(kInterval - absl::Milliseconds(1));
  EXPECT_EQ(clock_.Waiters(), 1);  // Still waiting.
  EXPECT_THAT(OnDisk(71), ElementsAre("<absent>"));
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_TRUE(Eventually([&] { return OnDisk(71).size() == 1 && OnDisk(71)[0] != "<absent>"; },
                         absl::Seconds(10)));
  EXPECT_THAT(OnDisk(71), ElementsAre(HasSubstr("first line")));
  // And again for the next line.
  (*file)->Append("second line");
  clock_.AwaitWaiters(1);
  clock_.Advance(kInterval);
  EXPECT_TRUE(Eventually([&] { return OnDisk(71).size() == 2; }, absl::Seconds(10)));
}

TEST_F(RunLogTest, ManyRunsShareOneSegmentAndReadBackSeparately) {
  constexpr int kRuns = 1000;
  std::vector<std::shared_ptr<RunLogFile>> logs;
  for (int64_t id = 1; id <= kRuns; ++id) logs.push_back(*store_.Create(id));
  // Three rounds of one line and one flush per run: every run's chunks interleave with
  // everyone else's.
  for (int round = 1; round <= 3; ++round) {
    for (auto& log : logs) {
      log->Append(absl::StrCat("run ", log->run_id(), " line ", round));
      log->Flush();
    }
  }
  for (auto& log : logs) log->Close();
  EXPECT_THAT(Files(dir_ + "/logs"), ElementsAre("2026-03-10/seg-1.idx", "2026-03-10/seg-1.log"));
  EXPECT_EQ(fs::file_size(dir_ + "/logs/2026-03-10/seg-1.idx"), 3 * kRuns * IndexRecord::kSize);
  RunLogStore restarted(dir_ + "/logs", clock_, ManualFlush());
  ASSERT_TRUE(restarted.Init().ok());
  for (int64_t id = 1; id <= kRuns; ++id) {
    auto page = restarted.Read(id, 1, 100);
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_EQ(Texts(page->lines), Numbered(absl::StrCat("run ", id, " line"), 3)) << id;
    EXPECT_TRUE(page->eof);
  }
}

TEST(RunLogThreadsTest, ConcurrentRunsFlushingAtOnceStaySeparated) {
  const std::string dir = jobwheel::testing::TestTempDir("RunLogThreadsTest") + "/logs";
  fs::remove_all(dir);
  RunLogOptions options = ManualFlush();
  options.flush_bytes = 100;  // A chunk every two lines or so.
  RunLogStore store(dir, RealClock::Get(), options);
  ASSERT_TRUE(store.Init().ok());
  constexpr int kThreads = 4;
  constexpr int kRunsPerThread = 50;
  constexpr int kLines = 40;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&store, t] {
      std::vector<std::shared_ptr<RunLogFile>> logs;
      for (int r = 0; r < kRunsPerThread; ++r) {
        logs.push_back(*store.Create(1 + t * kRunsPerThread + r));
      }
      for (int i = 1; i <= kLines; ++i) {
        for (auto& log : logs) log->Append(absl::StrCat("run ", log->run_id(), " line ", i));
      }
      for (auto& log : logs) log->Close();
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> files = Files(dir);
  EXPECT_EQ(files.size(), 2u) << absl::StrJoin(files, ", ");
  for (int64_t id = 1; id <= kThreads * kRunsPerThread; ++id) {
    auto page = store.Read(id, 1, 1000);
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_EQ(Texts(page->lines), Numbered(absl::StrCat("run ", id, " line"), kLines)) << id;
  }
}

TEST(RunLogRollOverTest, StartsANewSegmentAtTheSizeLimitAndAfterARestart) {
  const std::string dir = jobwheel::testing::TestTempDir("RunLogRollOverTest") + "/logs";
  fs::remove_all(dir);
  FakeClock clock(absl::FromCivil(absl::CivilSecond(2026, 3, 10, 12, 0, 0), absl::UTCTimeZone()));
  RunLogOptions options = ManualFlush();
  options.segment_bytes = 1000;
  {
    RunLogStore store(dir, clock, options);
    ASSERT_TRUE(store.Init().ok());
    auto longer = store.Create(100);  // Its chunks end up in several segments.
    ASSERT_TRUE(longer.ok());
    for (int64_t id = 1; id <= 30; ++id) {
      auto log = store.Create(id);
      ASSERT_TRUE(log.ok());
      (*log)->Append(absl::StrCat("run ", id, " line 1\nrun ", id, " line 2"));
      (*log)->Close();
      (*longer)->Append(absl::StrCat("run 100 line ", id));
      (*longer)->Flush();
    }
    // 30 * (2 * 43 + 34) bytes = 3600: four segments, each closed once past 1000 bytes.
    EXPECT_THAT(Files(dir),
                ElementsAre("2026-03-10/seg-1.idx", "2026-03-10/seg-1.log", "2026-03-10/seg-2.idx",
                            "2026-03-10/seg-2.log", "2026-03-10/seg-3.idx", "2026-03-10/seg-3.log",
                            "2026-03-10/seg-4.idx", "2026-03-10/seg-4.log"));
    for (int n = 1; n <= 3; ++n) {
      const auto size = fs::file_size(absl::StrCat(dir, "/2026-03-10/seg-", n, ".log"));
      EXPECT_GE(size, 1000u);
      EXPECT_LT(size, 1000u + 120);
    }
    auto page = store.Read(100, 1, 100);
    ASSERT_TRUE(page.ok());
    EXPECT_EQ(Texts(page->lines), Numbered("run 100 line", 30));
  }
  // A restart writes into a segment of its own and still reads the old runs.
  const auto old_size = fs::file_size(dir + "/2026-03-10/seg-4.log");
  RunLogStore restarted(dir, clock, options);
  ASSERT_TRUE(restarted.Init().ok());
  auto log = restarted.Create(31);
  ASSERT_TRUE(log.ok());
  (*log)->Append("after the restart");
  (*log)->Close();
  EXPECT_TRUE(fs::exists(dir + "/2026-03-10/seg-5.log"));
  EXPECT_EQ(fs::file_size(dir + "/2026-03-10/seg-4.log"), old_size);
  for (int64_t id = 1; id <= 30; ++id) {
    auto page = restarted.Read(id, 1, 10);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(Texts(page->lines), Numbered(absl::StrCat("run ", id, " line"), 2));
  }
  EXPECT_EQ(Texts(restarted.Read(100, 1, 100)->lines), Numbered("run 100 line", 30));
  EXPECT_THAT(restarted.Read(31, 1, 10)->lines, ElementsAre(HasSubstr("after the restart")));

  // A refused run whose chunks went to two segments is discarded whole.
  auto refused = restarted.Create(40);
  ASSERT_TRUE(refused.ok());
  for (int i = 1; i <= 40; ++i) {
    (*refused)->Append(absl::StrCat("refused line ", i));
    (*refused)->Flush();
  }
  ASSERT_TRUE(fs::exists(dir + "/2026-03-10/seg-6.log"));
  restarted.Remove(40);
  EXPECT_EQ(restarted.Read(40, 1, 10).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(DiskLines(dir, 40), ElementsAre("<absent>"));
  EXPECT_EQ(DiskLines(dir, 31).size(), 1u);
}

}  // namespace
}  // namespace jobwheel::sdk
