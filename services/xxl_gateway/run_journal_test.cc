#include "services/xxl_gateway/run_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace jobwheel::xxl {
namespace {

std::string TempPath(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(base != nullptr ? base : "/tmp", "/", name);
  unlink(path.c_str());
  return path;
}

RunRecord Rec(int64_t id, RunState state, const std::string& message = "") {
  RunRecord r;
  r.set_run_id(id);
  r.set_identity("demo http://h:1");
  r.set_state(state);
  r.set_message(message);
  return r;
}

std::vector<int64_t> Ids(const std::vector<RunRecord>& records) {
  std::vector<int64_t> ids;
  for (const RunRecord& r : records) ids.push_back(r.run_id());
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(RunJournalTest, TheLastRecordOfARunWinsAndForgottenOnesAreGone) {
  const std::string path = TempPath("journal-last");
  {
    RunJournal j(path);
    ASSERT_TRUE(j.Open().ok());
    ASSERT_TRUE(j.Append(Rec(1, RUN_STATE_RUNNING)).ok());
    ASSERT_TRUE(j.Append(Rec(2, RUN_STATE_QUEUED)).ok());
    ASSERT_TRUE(j.Append(Rec(1, RUN_STATE_ENDED, "done")).ok());
    ASSERT_TRUE(j.Forget(2).ok());
    ASSERT_TRUE(j.Append(Rec(3, RUN_STATE_FENCED)).ok());
  }
  RunJournal again(path);
  auto records = again.Open();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(Ids(*records), (std::vector<int64_t>{1, 3}));
  for (const RunRecord& r : *records) {
    if (r.run_id() == 1) {
      EXPECT_EQ(r.state(), RUN_STATE_ENDED);
      EXPECT_EQ(r.message(), "done");
    }
  }
}

// A crash in the middle of a write leaves part of a frame at the end: it is cut off, and the
// records appended after the restart are read next time.
TEST(RunJournalTest, ATornFrameAtTheEndIsCutOff) {
  const std::string path = TempPath("journal-torn");
  {
    RunJournal j(path);
    ASSERT_TRUE(j.Open().ok());
    ASSERT_TRUE(j.Append(Rec(1, RUN_STATE_RUNNING)).ok());
  }
  const std::string frame = JournalFrame(Rec(2, RUN_STATE_RUNNING, "torn"));
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, frame.data(), frame.size() - 3), static_cast<ssize_t>(frame.size() - 3));
  close(fd);
  {
    RunJournal j(path);
    auto records = j.Open();
    ASSERT_TRUE(records.ok()) << records.status();
    EXPECT_EQ(Ids(*records), (std::vector<int64_t>{1}));
    ASSERT_TRUE(j.Append(Rec(4, RUN_STATE_RUNNING)).ok());
  }
  RunJournal third(path);
  auto records = third.Open();
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(Ids(*records), (std::vector<int64_t>{1, 4}));
}

TEST(RunJournalTest, AFrameWithABadChecksumEndsTheFile) {
  const std::string path = TempPath("journal-crc");
  {
    RunJournal j(path);
    ASSERT_TRUE(j.Open().ok());
    ASSERT_TRUE(j.Append(Rec(1, RUN_STATE_RUNNING)).ok());
    ASSERT_TRUE(j.Append(Rec(2, RUN_STATE_RUNNING, "flipped")).ok());
  }
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  const int fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "X", 1, st.st_size - 2), 1);  // Inside run 2's message.
  close(fd);
  RunJournal j(path);
  auto records = j.Open();
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(Ids(*records), (std::vector<int64_t>{1}));
}

// Callers syncing at the same time share fdatasync calls; each returns only once its own
// frame is covered.
TEST(RunJournalTest, ConcurrentSyncsShareOneFdatasync) {
  const std::string path = TempPath("journal-group");
  RunJournal j(path);
  ASSERT_TRUE(j.Open().ok());
  constexpr int kThreads = 16;
  constexpr int kEach = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&j, t] {
      for (int i = 0; i < kEach; ++i) {
        auto seq = j.Append(Rec(t * 1000 + i + 1, RUN_STATE_RUNNING));
        ASSERT_TRUE(seq.ok());
        ASSERT_TRUE(j.SyncTo(*seq).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GE(j.syncs(), 1u);
  EXPECT_LT(j.syncs(), static_cast<uint64_t>(kThreads * kEach));
  RunJournal again(path);
  auto records = again.Open();
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(records->size(), static_cast<size_t>(kThreads * kEach));
}

TEST(RunJournalTest, CompactKeepsTheLiveRecordsOnlyAndAppendsGoOn) {
  const std::string path = TempPath("journal-compact");
  {
    RunJournal j(path);
    ASSERT_TRUE(j.Open().ok());
    for (int i = 1; i <= 100; ++i) ASSERT_TRUE(j.Append(Rec(i, RUN_STATE_ENDED)).ok());
    const uint64_t before = j.bytes();
    ASSERT_TRUE(j.Compact([] { return std::vector<RunRecord>{Rec(7, RUN_STATE_ENDED)}; }).ok());
    EXPECT_LT(j.bytes(), before / 10);
    auto seq = j.Append(Rec(8, RUN_STATE_RUNNING));
    ASSERT_TRUE(seq.ok());
    ASSERT_TRUE(j.SyncTo(*seq).ok());
  }
  RunJournal again(path);
  auto records = again.Open();
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(Ids(*records), (std::vector<int64_t>{7, 8}));
}

TEST(RunJournalTest, AnEmptyPathKeepsNothing) {
  RunJournal j("");
  ASSERT_TRUE(j.Open().ok());
  auto seq = j.Append(Rec(1, RUN_STATE_RUNNING));
  ASSERT_TRUE(seq.ok());
  EXPECT_TRUE(j.SyncTo(*seq).ok());
  EXPECT_EQ(j.bytes(), 0u);
}

}  // namespace
}  // namespace jobwheel::xxl
