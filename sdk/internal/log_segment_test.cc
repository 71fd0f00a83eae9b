#include "sdk/internal/log_segment.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwheel::sdk {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kDay[] = "2026-03-10";

TEST(IndexRecordTest, RoundTripsAndRejectsDamage) {
  const IndexRecord chunk{42, 1 << 20, 300, 0};
  const std::string bytes = EncodeIndexRecord(chunk);
  ASSERT_EQ(bytes.size(), IndexRecord::kSize);
  // Little-endian run id first: a fixed layout others can read.
  EXPECT_EQ(bytes[0], 42);
  EXPECT_EQ(bytes[1], 0);
  IndexRecord r;
  ASSERT_TRUE(DecodeIndexRecord(bytes, &r));
  EXPECT_EQ(r.run_id, 42);
  EXPECT_EQ(r.offset, 1 << 20);
  EXPECT_EQ(r.length, 300);
  EXPECT_FALSE(r.tombstone());

  ASSERT_TRUE(DecodeIndexRecord(EncodeIndexRecord({7, 96, IndexRecord::kTombstone, 3}), &r));
  EXPECT_TRUE(r.tombstone());
  EXPECT_EQ(r.segment, 3u);

  std::string flipped = bytes;
  flipped[9] ^= 1;
  EXPECT_FALSE(DecodeIndexRecord(flipped, &r));
  EXPECT_FALSE(DecodeIndexRecord(bytes.substr(0, 31), &r));
  EXPECT_FALSE(DecodeIndexRecord(std::string(32, '\0'), &r));  // Zeroes after a crash.
  EXPECT_FALSE(DecodeIndexRecord(EncodeIndexRecord({0, 0, 10, 0}), &r));
  EXPECT_FALSE(DecodeIndexRecord(EncodeIndexRecord({1, -5, 10, 0}), &r));
  EXPECT_FALSE(DecodeIndexRecord(EncodeIndexRecord({1, 0, 0, 0}), &r));
  EXPECT_FALSE(
      DecodeIndexRecord(EncodeIndexRecord({1, 0, -1, 0}), &r));  // Tombstone needs a segment.
  EXPECT_FALSE(DecodeIndexRecord(EncodeIndexRecord({1, INT64_MAX, 10, 0}), &r));
}

TEST(IsDayNameTest, AcceptsOnlyDates) {
  EXPECT_TRUE(IsDayName("2026-03-10"));
  EXPECT_FALSE(IsDayName("../../etc"));
  EXPECT_FALSE(IsDayName("2026-03-1/"));
  EXPECT_FALSE(IsDayName("2026_03_10"));
  EXPECT_FALSE(IsDayName("2026-03-100"));
}

class LogSegmentsTest : public ::testing::Test {
 protected:
  LogSegmentsTest()
      : dir_(jobwheel::testing::TestTempDir(
                 ::testing::UnitTest::GetInstance()->current_test_info()->name()) +
             "/logs") {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  std::unique_ptr<LogSegments> Open(size_t segment_bytes = 64 << 20) {
    auto segments = LogSegments::Open(dir_, segment_bytes);
    EXPECT_TRUE(segments.ok()) << segments.status();
    return segments.ok() ? std::move(*segments) : nullptr;
  }

  // run_id's chunks in kDay as text, read through `segments`.
  std::vector<std::string> Texts(LogSegments& segments, int64_t run_id) {
    auto day = segments.OpenDay(kDay);
    if (!day.ok()) return {day.status().ToString()};
    auto chunks = segments.Chunks(day->get(), kDay, run_id);
    if (!chunks.ok()) return {chunks.status().ToString()};
    std::vector<std::string> out;
    LogSegments::ChunkReader reader(&segments, day->get());
    for (const LogChunk& c : *chunks) {
      auto data = reader.Read(c);
      out.push_back(data.ok() ? *data : data.status().ToString());
    }
    return out;
  }

  std::vector<std::string> Files() {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      if (!e.is_directory()) out.push_back(fs::relative(e.path(), dir_).string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string dir_;
};

TEST_F(LogSegmentsTest, AppendsChunksOfManyRunsToOneSegment) {
  auto segments = Open();
  for (int round = 0; round < 2; ++round) {
    for (int64_t run = 1; run <= 3; ++run) {
      auto chunk = segments->Append(kDay, run, absl::StrCat("run ", run, " round ", round, "\n"));
      ASSERT_TRUE(chunk.ok()) << chunk.status();
      EXPECT_EQ(chunk->segment, 1u);
    }
  }
  EXPECT_THAT(Texts(*segments, 2), ElementsAre("run 2 round 0\n", "run 2 round 1\n"));
  EXPECT_THAT(Texts(*segments, 4), IsEmpty());
  EXPECT_THAT(Files(), ElementsAre("2026-03-10/seg-1.idx", "2026-03-10/seg-1.log"));
  EXPECT_EQ(fs::file_size(dir_ + "/2026-03-10/seg-1.idx"), 6 * IndexRecord::kSize);
  EXPECT_EQ(segments->Append(kDay, 0, "x\n").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(segments->Append("../etc", 1, "x\n").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(LogSegmentsTest, RollsOverAndSkipsSegmentsThatCannotHoldTheRun) {
  {
    auto writer = Open(/*segment_bytes=*/1000);
    // 100-byte chunks: runs 1-10 fill seg-1, 11-20 seg-2, 21-30 seg-3.
    for (int64_t run = 1; run <= 30; ++run) {
      auto chunk = writer->Append(kDay, run, std::string(99, 'a' + run % 26) + "\n");
      ASSERT_TRUE(chunk.ok());
      EXPECT_EQ(chunk->segment, static_cast<uint32_t>((run - 1) / 10 + 1));
    }
    // Its own segments' ranges are known: only seg-2's index is read.
    EXPECT_EQ(Texts(*writer, 15).size(), 1u);
    EXPECT_EQ(writer->stats().index_bytes_read, 10 * IndexRecord::kSize);
    EXPECT_EQ(writer->stats().data_bytes_read, 100u);
  }
  // Another process learns each index's range once, then reads only the index that matches.
  auto reader = Open();
  EXPECT_THAT(Texts(*reader, 25), ElementsAre(std::string(99, 'a' + 25) + "\n"));
  EXPECT_EQ(reader->stats().index_bytes_read, 40 * IndexRecord::kSize);
  EXPECT_THAT(Texts(*reader, 5), ElementsAre(std::string(99, 'a' + 5) + "\n"));
  EXPECT_EQ(reader->stats().index_bytes_read, 50 * IndexRecord::kSize);
  EXPECT_THAT(Texts(*reader, 31), IsEmpty());
  EXPECT_EQ(reader->stats().index_bytes_read, 50 * IndexRecord::kSize);
  EXPECT_EQ(reader->stats().data_bytes_read, 200u);  // Only the two chunks.
}

TEST_F(LogSegmentsTest, RunsOfSeveralDaysKeepTheirDaysSegmentsOpen) {
  auto segments = Open();
  const std::vector<std::string> days = {"2026-03-08", "2026-03-09", "2026-03-10"};
  for (int round = 0; round < 3; ++round) {
    for (const std::string& day : days) {
      auto chunk = segments->Append(day, 1, "x\n");
      ASSERT_TRUE(chunk.ok());
      EXPECT_EQ(chunk->segment, 1u) << day;  // No new segment per switch of day.
    }
  }
  EXPECT_EQ(Files().size(), 6u);
}

TEST_F(LogSegmentsTest, ProcessesNeverShareASegmentAndSeeEachOthersGrowth) {
  auto a = Open();
  auto b = Open();
  ASSERT_EQ(a->Append(kDay, 1, "a1\n")->segment, 1u);
  ASSERT_EQ(b->Append(kDay, 1, "b1\n")->segment, 2u);
  ASSERT_EQ(a->Append(kDay, 1, "a2\n")->segment, 1u);
  EXPECT_THAT(Texts(*b, 1), ElementsAre("a1\n", "a2\n", "b1\n"));  // By segment number.
  // b cached seg-1's range; a's later records there are still found.
  ASSERT_TRUE(a->Append(kDay, 9, "a9\n").ok());
  EXPECT_THAT(Texts(*b, 9), ElementsAre("a9\n"));
}

TEST_F(LogSegmentsTest, ATombstoneDiscardsOneLogsChunksOnly) {
  auto earlier = Open(/*segment_bytes=*/10);
  ASSERT_TRUE(earlier->Append(kDay, 5, "earlier process\n").ok());
  earlier.reset();
  auto segments = Open(/*segment_bytes=*/10);
  auto first = segments->Append(kDay, 5, "refused 1\n");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(segments->Append(kDay, 6, "other run\n").ok());
  ASSERT_TRUE(segments->Append(kDay, 5, "refused 2\n").ok());  // Rolled over meanwhile.
  ASSERT_TRUE(segments->Discard(kDay, 5, *first).ok());
  EXPECT_THAT(Texts(*segments, 5), ElementsAre("earlier process\n"));
  EXPECT_THAT(Texts(*segments, 6), ElementsAre("other run\n"));
  // A later log of the run counts again.
  ASSERT_TRUE(segments->Append(kDay, 5, "accepted later\n").ok());
  EXPECT_THAT(Texts(*segments, 5), ElementsAre("earlier process\n", "accepted later\n"));
  EXPECT_THAT(Texts(*Open(), 5), ElementsAre("earlier process\n", "accepted later\n"));
}

TEST_F(LogSegmentsTest, IgnoresTornRecordsRecordsPastTheDataAndGarbage) {
  {
    auto writer = Open();
    ASSERT_TRUE(writer->Append(kDay, 1, "one\n").ok());
    ASSERT_TRUE(writer->Append(kDay, 2, "two\n").ok());
  }
  const std::string day = dir_ + "/" + kDay;
  {
    std::ofstream idx(day + "/seg-1.idx", std::ios::app | std::ios::binary);
    idx << EncodeIndexRecord({1, 4, 100, 0});              // Its data never made it.
    idx << EncodeIndexRecord({1, 0, 8, 0}).substr(0, 13);  // Torn.
  }
  std::ofstream(day + "/seg-7.idx", std::ios::binary) << std::string(100, '\x5a');
  std::ofstream(day + "/seg-8.idx", std::ios::binary) << EncodeIndexRecord({1, 0, 4, 0});
  std::ofstream(day + "/seg-x.idx", std::ios::binary) << "junk";
  fs::create_directories(day + "/seg-9.idx");  // Not even a file.
  auto reader = Open();
  EXPECT_THAT(Texts(*reader, 1), ElementsAre("one\n"));  // seg-8 has no data file.
  EXPECT_THAT(Texts(*reader, 2), ElementsAre("two\n"));
  EXPECT_THAT(Texts(*reader, 3), IsEmpty());
  // A writer takes the next number past all of them.
  auto chunk = reader->Append(kDay, 3, "three\n");
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  EXPECT_EQ(chunk->segment, 10u);
  EXPECT_THAT(Texts(*reader, 3), ElementsAre("three\n"));
}

TEST_F(LogSegmentsTest, RemakesADayFolderRemovedWhileItsSegmentIsOpen) {
  auto segments = Open();
  ASSERT_TRUE(segments->Append(kDay, 1, "before\n").ok());
  fs::remove_all(dir_ + "/" + kDay);
  ASSERT_TRUE(segments->Append(kDay, 1, "after\n").ok());
  EXPECT_THAT(Texts(*segments, 1), ElementsAre("after\n"));
}

TEST_F(LogSegmentsTest, NeverFollowsSymlinks) {
  const std::string outside = dir_ + "/../outside";
  fs::remove_all(outside);
  fs::create_directories(outside);
  std::ofstream(outside + "/target") << "secret\n";
  // A planted segment file: the writer takes the next number instead.
  fs::create_directories(dir_ + "/" + kDay);
  fs::create_symlink(outside + "/target", dir_ + "/" + kDay + "/seg-1.log");
  auto segments = Open();
  auto chunk = segments->Append(kDay, 1, "mine\n");
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->segment, 2u);
  EXPECT_EQ(fs::file_size(outside + "/target"), 7u);
  // One planted at the number a roll-over takes next: O_CREAT|O_EXCL does not follow it.
  auto rolling = Open(/*segment_bytes=*/1);
  ASSERT_EQ(rolling->Append(kDay, 1, "a\n")->segment, 3u);
  fs::create_symlink(outside + "/target", dir_ + "/" + kDay + "/seg-4.idx");
  chunk = rolling->Append(kDay, 1, "b\n");
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  EXPECT_EQ(chunk->segment, 5u);
  EXPECT_EQ(fs::file_size(outside + "/target"), 7u);
  EXPECT_FALSE(fs::exists(dir_ + "/" + kDay + "/seg-4.log"));  // Its data file went again.
  // A planted day folder: neither written nor read.
  fs::create_directory_symlink(outside, dir_ + "/2026-03-11");
  EXPECT_FALSE(segments->Append("2026-03-11", 1, "x\n").ok());
  EXPECT_EQ(segments->OpenDay("2026-03-11").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(segments->OpenDay("2026-03-12").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::distance(fs::directory_iterator(outside), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace jobwheel::sdk
