#include "sdk/internal/run_log.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "common/clock.h"
#include "common/testing/process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwheel::sdk {
namespace {

using ::jobwheel::testing::Eventually;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::Duration kInterval = absl::Milliseconds(200);

RunLogOptions ManualFlush() {
  RunLogOptions options;
  options.flush_interval = kInterval;
  options.background_flush = false;  // The tests call FlushDue().
  return options;
}

// The lines of the file at `path`, or {"<absent>"}.
std::vector<std::string> FileLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {"<absent>"};
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

class RunLogTest : public ::testing::Test {
 protected:
  explicit RunLogTest(RunLogOptions options = ManualFlush())
      : dir_(jobwheel::testing::TestTempDir(
            ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        clock_(absl::FromCivil(absl::CivilSecond(2026, 3, 10, 12, 0, 0), absl::UTCTimeZone())),
        store_(dir_ + "/logs", clock_, options) {}
  void SetUp() override { ASSERT_TRUE(store_.Init().ok()); }

  std::string LogPath(int64_t run_id, const std::string& day = "2026-03-10") {
    return absl::StrCat(std::filesystem::canonical(dir_ + "/logs").string(), "/", day, "/",
                        run_id, ".log");
  }
  std::vector<std::string> ReadAll(int64_t run_id) {
    auto page = store_.Read(run_id, 1, 1000);
    if (!page.ok()) return {page.status().ToString()};
    return page->lines;
  }

  std::string dir_;
  FakeClock clock_;
  RunLogStore store_;
};

TEST_F(RunLogTest, BuffersTimestampedLinesUntilCloseThenWritesThemIntoTheDayFolder) {
  auto file = store_.Create(42);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->path(), LogPath(42));
  (*file)->Append("first\nsecond");
  clock_.Advance(absl::Milliseconds(5));
  (*file)->Append("third\n");
  // Nothing on disk yet (not even the day folder), but Read sees the lines.
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/logs/2026-03-10"));
  auto page = store_.Read(42, 1, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(page->lines, ElementsAre("2026-03-10 12:00:00.000 first",
                                       "2026-03-10 12:00:00.000 second",
                                       "2026-03-10 12:00:00.005 third"));
  EXPECT_EQ(page->from_line, 1);
  EXPECT_EQ(page->to_line, 3);
  EXPECT_TRUE(page->eof);

  (*file)->Close();
  EXPECT_THAT(FileLines(LogPath(42)), ElementsAre("2026-03-10 12:00:00.000 first",
                                                  "2026-03-10 12:00:00.000 second",
                                                  "2026-03-10 12:00:00.005 third"));
  page = store_.Read(42, 2, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(page->lines, ElementsAre(HasSubstr("second"), HasSubstr("third")));
  EXPECT_EQ(page->from_line, 2);
  EXPECT_EQ(page->to_line, 3);
  EXPECT_TRUE(page->eof);

  // A line appended after Close (a handler's stray thread) is written at once.
  (*file)->Append("late");
  EXPECT_EQ(FileLines(LogPath(42)).size(), 4u);
  EXPECT_THAT(ReadAll(42), ElementsAre(HasSubstr("first"), HasSubstr("second"),
                                       HasSubstr("third"), HasSubstr("late")));
}

TEST_F(RunLogTest, FlushesAnIntervalAfterTheFirstUnwrittenLine) {
  auto file = store_.Create(5);
  ASSERT_TRUE(file.ok());
  (*file)->Append("one");
  clock_.Advance(absl::Milliseconds(150));
  (*file)->Append("two");
  clock_.Advance(absl::Milliseconds(49));
  EXPECT_EQ(store_.FlushDue(), 0);  // 199 ms after "one".
  EXPECT_FALSE(std::filesystem::exists(LogPath(5)));
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(store_.FlushDue(), 1);
  EXPECT_THAT(FileLines(LogPath(5)), ElementsAre(HasSubstr("one"), HasSubstr("two")));
  EXPECT_EQ(store_.FlushDue(), 0);  // Nothing left to write.

  // The next line starts a new interval; Read numbers the file's lines, then buffered ones.
  (*file)->Append("three");
  auto page = store_.Read(5, 2, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_THAT(page->lines, ElementsAre(HasSubstr("two"), HasSubstr("three")));
  EXPECT_EQ(page->from_line, 2);
  EXPECT_EQ(page->to_line, 3);
  EXPECT_TRUE(page->eof);
  clock_.Advance(kInterval - absl::Milliseconds(1));
  EXPECT_EQ(store_.FlushDue(), 0);
  EXPECT_EQ(FileLines(LogPath(5)).size(), 2u);
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(store_.FlushDue(), 1);
  EXPECT_THAT(FileLines(LogPath(5)),
              ElementsAre(HasSubstr("one"), HasSubstr("two"), HasSubstr("three")));
  EXPECT_THAT(ReadAll(5), ElementsAre(HasSubstr("one"), HasSubstr("two"), HasSubstr("three")));
}

TEST_F(RunLogTest, AClosedLogIsNotWrittenAgainByItsQueuedFlush) {
  auto file = store_.Create(6);
  ASSERT_TRUE(file.ok());
  (*file)->Append("only");
  (*file)->Close();
  clock_.Advance(kInterval);
  EXPECT_EQ(store_.FlushDue(), 0);
  EXPECT_THAT(FileLines(LogPath(6)), ElementsAre(HasSubstr("only")));
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
  EXPECT_FALSE(std::filesystem::exists((*file)->path()));  // 909 bytes buffered.
  (*file)->Append(text);                                    // 1010 bytes: written.
  EXPECT_EQ(FileLines((*file)->path()).size(), 10u);
  (*file)->Append("after");
  EXPECT_EQ(FileLines((*file)->path()).size(), 10u);
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
  EXPECT_FALSE(std::filesystem::exists(LogPath(7)));
  // A new day's folder is used when the clock gets there.
  clock_.Advance(absl::Hours(24));
  auto next_day = store_.Create(8, &created);
  ASSERT_TRUE(next_day.ok());
  EXPECT_TRUE(created);
  EXPECT_THAT((*next_day)->path(), HasSubstr("/2026-03-11/8.log"));
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

TEST_F(RunLogTest, RemoveDeletesTheFileItsLogCreatedButNotAnEarlierProcesssFile) {
  auto written = store_.Create(12);
  ASSERT_TRUE(written.ok());
  (*written)->Append("flushed already");
  (*written)->Flush();
  ASSERT_TRUE(std::filesystem::exists(LogPath(12)));
  store_.Remove(12);
  EXPECT_FALSE(std::filesystem::exists(LogPath(12)));
  EXPECT_EQ(store_.Read(12, 1, 10).status().code(), absl::StatusCode::kNotFound);

  std::filesystem::create_directories(dir_ + "/logs/2026-03-10");
  std::ofstream(LogPath(13)) << "2026-03-10 11:00:00.000 earlier process\n";
  auto reopened = store_.Create(13);
  ASSERT_TRUE(reopened.ok());
  (*reopened)->Append("this process");
  EXPECT_THAT(ReadAll(13), ElementsAre(HasSubstr("earlier process"), HasSubstr("this process")));
  (*reopened)->Flush();  // Appended, not truncated.
  EXPECT_THAT(FileLines(LogPath(13)),
              ElementsAre(HasSubstr("earlier process"), HasSubstr("this process")));
  store_.Remove(13);
  EXPECT_TRUE(std::filesystem::exists(LogPath(13)));
}

TEST_F(RunLogTest, PagesThroughFileAndBufferedLines) {
  auto file = store_.Create(7);
  ASSERT_TRUE(file.ok());
  for (int i = 1; i <= 15; ++i) (*file)->Append(absl::StrCat("line ", i));
  (*file)->Flush();
  for (int i = 16; i <= 25; ++i) (*file)->Append(absl::StrCat("line ", i));
  ASSERT_EQ(FileLines(LogPath(7)).size(), 15u);
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

TEST_F(RunLogTest, RefusesAPathThatResolvesOutsideTheLogDir) {
  const std::string outside = dir_ + "/secret.txt";
  std::ofstream(outside) << "secret\n";
  std::filesystem::create_directories(dir_ + "/logs/2026-03-10");
  ASSERT_EQ(::symlink(outside.c_str(), (dir_ + "/logs/2026-03-10/77.log").c_str()), 0);
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
  EXPECT_THAT(FileLines(outside), ElementsAre("secret"));
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
  EXPECT_EQ(store_.Read(1, 1, 10).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_.Read(2, 1, 10).ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/logs/scripts"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/logs/not-a-date"));
}

TEST_F(RunLogTest, RemakesADayFolderRemovedMeanwhile) {
  auto file = store_.Create(21);
  ASSERT_TRUE(file.ok());
  (*file)->Append("before");
  (*file)->Close();
  std::filesystem::remove_all(dir_ + "/logs/2026-03-10");
  (*file)->Append("after");
  EXPECT_THAT(FileLines(LogPath(21)), ElementsAre(HasSubstr("after")));
}

TEST_F(RunLogTest, ShutdownWritesEverythingAndLaterLinesAtOnce) {
  auto file = store_.Create(31);
  ASSERT_TRUE(file.ok());
  (*file)->Append("buffered");
  store_.Shutdown();
  EXPECT_THAT(FileLines(LogPath(31)), ElementsAre(HasSubstr("buffered")));
  (*file)->Append("after shutdown");
  EXPECT_THAT(FileLines(LogPath(31)),
              ElementsAre(HasSubstr("buffered"), HasSubstr("after shutdown")));
  store_.Shutdown();  // Idempotent.
}

TEST_F(RunLogTest, ALogOutlivesItsStore) {
  std::shared_ptr<RunLogFile> file;
  std::string path;
  {
    RunLogStore store(dir_ + "/other", clock_, ManualFlush());
    ASSERT_TRUE(store.Init().ok());
    auto made = store.Create(41);
    ASSERT_TRUE(made.ok());
    file = *made;
    path = file->path();
    file->Append("first");
  }
  EXPECT_THAT(FileLines(path), ElementsAre(HasSubstr("first")));
  file->Append("second");  // A stuck handler's thread, after the executor shut down.
  EXPECT_THAT(FileLines(path), ElementsAre(HasSubstr("first"), HasSubstr("second")));
  file.reset();
}

TEST_F(RunLogTest, DestroyingAnUnclosedLogWritesItsLines) {
  auto file = store_.Create(51);
  ASSERT_TRUE(file.ok());
  (*file)->Append("unclosed");
  file->reset();
  EXPECT_THAT(FileLines(LogPath(51)), ElementsAre(HasSubstr("unclosed")));
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
  EXPECT_THAT(FileLines((*file)->path()), ElementsAre(HasSubstr("now")));
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
  clock_.Advance(kInterval - absl::Milliseconds(1));
  EXPECT_FALSE(std::filesystem::exists(LogPath(71)));
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_TRUE(Eventually([&] { return std::filesystem::exists(LogPath(71)); },
                         absl::Seconds(10)));
  EXPECT_THAT(FileLines(LogPath(71)), ElementsAre(HasSubstr("first line")));
  // And again for the next line.
  (*file)->Append("second line");
  clock_.Advance(kInterval);
  EXPECT_TRUE(Eventually([&] { return FileLines(LogPath(71)).size() == 2; }, absl::Seconds(10)));
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

}  // namespace
}  // namespace jobwheel::sdk
