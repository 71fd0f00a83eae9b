#include "sdk/internal/result_spool.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/process.h"
#include "gtest/gtest.h"

namespace jobwheel::sdk {
namespace {

namespace fs = std::filesystem;

jobwheel::v1::RunResult Result(int64_t run_id, const std::string& message = "") {
  jobwheel::v1::RunResult r;
  r.set_run_id(run_id);
  r.set_status(jobwheel::v1::RUN_STATUS_SUCCEEDED);
  r.set_message(message.empty() ? absl::StrCat("run ", run_id) : message);
  return r;
}

std::set<int64_t> Ids(const std::vector<jobwheel::v1::RunResult>& results) {
  std::set<int64_t> ids;
  for (const auto& r : results) ids.insert(r.run_id());
  return ids;
}

class ResultSpoolTest : public ::testing::Test {
 protected:
  ResultSpoolTest()
      : dir_(jobwheel::testing::TestTempDir(
                 ::testing::UnitTest::GetInstance()->current_test_info()->name()) +
             "/spool") {
    fs::remove_all(dir_);
  }

  // A new spool object on the same directory, loaded: what a restarted process sees.
  std::set<int64_t> Reopen(size_t max_segment_bytes = 8 << 20) {
    ResultSpool again(dir_, max_segment_bytes);
    EXPECT_TRUE(again.Init().ok());
    auto all = again.LoadAll();
    EXPECT_TRUE(all.ok()) << all.status();
    return all.ok() ? Ids(*all) : std::set<int64_t>();
  }

  std::string dir_;
};

TEST_F(ResultSpoolTest, PutRemoveAndReloadAfterARestart) {
  {
    ResultSpool spool(dir_);
    ASSERT_TRUE(spool.Init().ok());
    ASSERT_TRUE(spool.LoadAll().ok());
    for (int64_t id = 1; id <= 5; ++id) ASSERT_TRUE(spool.Put(Result(id)).ok());
    ASSERT_TRUE(spool.Remove(2).ok());
    ASSERT_TRUE(spool.Remove(4).ok());
    ASSERT_TRUE(spool.Remove(99).ok());  // Absent: fine.
    auto now = spool.LoadAll();
    ASSERT_TRUE(now.ok());
    EXPECT_EQ(Ids(*now), (std::set<int64_t>{1, 3, 5}));
  }
  EXPECT_EQ(Reopen(), (std::set<int64_t>{1, 3, 5}));
  // The restart compacted the journal into one segment; it loads the same again.
  EXPECT_EQ(Reopen(), (std::set<int64_t>{1, 3, 5}));
}

TEST_F(ResultSpoolTest, AppendThenOneSyncForAll) {
  {
    ResultSpool spool(dir_);
    ASSERT_TRUE(spool.Init().ok());
    ASSERT_TRUE(spool.LoadAll().ok());
    for (int64_t id = 1; id <= 20; ++id) ASSERT_TRUE(spool.Append(Result(id)).ok());
    ASSERT_TRUE(spool.Sync().ok());
    ASSERT_TRUE(spool.Sync().ok());  // Nothing new: returns at once.
  }
  EXPECT_EQ(Reopen().size(), 20u);
}

TEST_F(ResultSpoolTest, TheLatestPutOfARunWins) {
  ResultSpool spool(dir_);
  ASSERT_TRUE(spool.Init().ok());
  ASSERT_TRUE(spool.Put(Result(7, "first")).ok());
  ASSERT_TRUE(spool.Put(Result(7, "second")).ok());
  ResultSpool again(dir_);
  ASSERT_TRUE(again.Init().ok());
  auto all = again.LoadAll();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].message(), "second");
}

TEST_F(ResultSpoolTest, ATornLastRecordIsIgnored) {
  {
    ResultSpool spool(dir_);
    ASSERT_TRUE(spool.Init().ok());
    ASSERT_TRUE(spool.Put(Result(1)).ok());
    ASSERT_TRUE(spool.Put(Result(2)).ok());
  }
  // A crash in the middle of appending a third record.
  std::string segment;
  for (const auto& e : fs::directory_iterator(dir_)) segment = e.path().string();
  const auto size = fs::file_size(segment);
  std::ofstream(segment, std::ios::app | std::ios::binary) << std::string("\x40\0\0\0\x12", 5);
  EXPECT_EQ(fs::file_size(segment), size + 5);
  EXPECT_EQ(Reopen(), (std::set<int64_t>{1, 2}));
  EXPECT_FALSE(fs::exists(segment + ".bad"));
}

TEST_F(ResultSpoolTest, ConcurrentPutsAreAllDurable) {
  ResultSpool spool(dir_);
  ASSERT_TRUE(spool.Init().ok());
  ASSERT_TRUE(spool.LoadAll().ok());
  constexpr int kThreads = 16;
  constexpr int kEach = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&spool, t] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_TRUE(spool.Put(Result(1 + t * kEach + i)).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(Reopen().size(), static_cast<size_t>(kThreads * kEach));
}

TEST_F(ResultSpoolTest, SegmentsRollOverAndGoAwayOnceAcknowledged) {
  ResultSpool spool(dir_, /*max_segment_bytes=*/512);
  ASSERT_TRUE(spool.Init().ok());
  ASSERT_TRUE(spool.LoadAll().ok());
  for (int64_t id = 1; id <= 100; ++id) ASSERT_TRUE(spool.Put(Result(id)).ok());
  EXPECT_GE(spool.segments(), 5u);
  // Once every result is acknowledged only the segment being written remains.
  for (int64_t id = 1; id <= 100; ++id) ASSERT_TRUE(spool.Remove(id).ok());
  EXPECT_EQ(spool.segments(), 1u);
  EXPECT_TRUE(Reopen(512).empty());
}

TEST_F(ResultSpoolTest, AnOldSegmentWithALiveResultKeepsNewerOnes) {
  ResultSpool spool(dir_, /*max_segment_bytes=*/256);
  ASSERT_TRUE(spool.Init().ok());
  ASSERT_TRUE(spool.LoadAll().ok());
  for (int64_t id = 1; id <= 40; ++id) ASSERT_TRUE(spool.Put(Result(id)).ok());
  // Run 1, in the oldest segment, is never acknowledged: that segment stays, and so do the
  // newer ones holding the others' tombstones. A restart brings back run 1 alone.
  for (int64_t id = 2; id <= 40; ++id) ASSERT_TRUE(spool.Remove(id).ok());
  EXPECT_EQ(Reopen(256), (std::set<int64_t>{1}));
}

TEST_F(ResultSpoolTest, ResultFilesOfTheFormerFormatAreMigrated) {
  fs::create_directories(dir_);
  {
    std::string data;
    ASSERT_TRUE(Result(41).SerializeToString(&data));
    std::ofstream(dir_ + "/41.result", std::ios::binary) << data;
    std::ofstream(dir_ + "/42.result") << "\xff\xff garbage";
    std::ofstream(dir_ + "/43.result.9.tmp") << "half written";
  }
  ResultSpool spool(dir_);
  ASSERT_TRUE(spool.Init().ok());
  auto all = spool.LoadAll();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Ids(*all), (std::set<int64_t>{41}));
  EXPECT_FALSE(fs::exists(dir_ + "/41.result"));  // Now in the journal.
  EXPECT_TRUE(fs::exists(dir_ + "/42.result.bad"));
  EXPECT_FALSE(fs::exists(dir_ + "/43.result.9.tmp"));
  EXPECT_EQ(Reopen(), (std::set<int64_t>{41}));
}

// A result keeps its run's result key through the journal, its compaction and a restart;
// records written before results carried keys (the same format, without the field) load with
// an empty key, as they were sent then.
TEST_F(ResultSpoolTest, ResultKeysSurviveRestartsAndOldRecordsLoadWithout) {
  const std::string key = std::string("\x00\x01\xff", 3) + std::string(29, '\x7f');
  {
    ResultSpool spool(dir_);
    ASSERT_TRUE(spool.Init().ok());
    jobwheel::v1::RunResult keyed = Result(1);
    keyed.set_result_key(key);
    ASSERT_TRUE(spool.Put(keyed).ok());
    ASSERT_TRUE(spool.Put(Result(2)).ok());  // No key: as an older executor wrote it.
  }
  for (int restart = 0; restart < 2; ++restart) {  // The second one reads the compacted journal.
    ResultSpool spool(dir_);
    ASSERT_TRUE(spool.Init().ok());
    auto all = spool.LoadAll();
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0].run_id(), 1);
    EXPECT_EQ((*all)[0].result_key(), key);
    EXPECT_EQ((*all)[1].run_id(), 2);
    EXPECT_TRUE((*all)[1].result_key().empty());
  }
}

TEST_F(ResultSpoolTest, RejectsANonPositiveRunId) {
  ResultSpool spool(dir_);
  ASSERT_TRUE(spool.Init().ok());
  EXPECT_EQ(spool.Put(Result(0)).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace jobwheel::sdk
