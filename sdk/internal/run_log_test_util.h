#ifndef JOBWHEEL_SDK_INTERNAL_RUN_LOG_TEST_UTIL_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_LOG_TEST_UTIL_H_

// What the run log tests share: a store on a SimulatedClock at 2026-03-10 12:00 UTC with
// manual flushes, and helpers that look at the files.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/civil_time.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "sdk/internal/run_log_store.h"

namespace jobwheel::sdk {

inline constexpr absl::Duration kInterval = absl::Milliseconds(200);

inline RunLogOptions ManualFlush() {
  RunLogOptions options;
  options.flush_interval = kInterval;
  options.background_flush = false;  // The tests call FlushDue().
  return options;
}

// The lines of run_id's log on disk under `log_dir` (what a restarted executor would read: not
// the lines another store still buffers), or {"<absent>"}.
inline std::vector<std::string> DiskLines(const std::string& log_dir, int64_t run_id) {
  FakeClock clock;
  RunLogStore fresh(log_dir, clock, ManualFlush());
  if (!fresh.Init().ok()) return {"<init failed>"};
  auto page = fresh.Read(run_id, 1, 100000);
  if (absl::IsNotFound(page.status())) return {"<absent>"};
  if (!page.ok()) return {page.status().ToString()};
  return page->lines;
}

// The files under `dir`, relative to it, sorted.
inline std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory()) out.push_back(fs::relative(it->path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class RunLogTest : public ::testing::Test {
 protected:
  explicit RunLogTest(RunLogOptions options = ManualFlush())
      : dir_(jobwheel::testing::TestTempDir(
            ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        clock_(absl::FromCivil(absl::CivilSecond(2026, 3, 10, 12, 0, 0), absl::UTCTimeZone())),
        store_(dir_ + "/logs", clock_, options) {}
  void SetUp() override { ASSERT_TRUE(store_.Init().ok()); }

  // An old-format per-run file.
  std::string LegacyPath(int64_t run_id, const std::string& day = "2026-03-10") {
    return absl::StrCat(dir_, "/logs/", day, "/", run_id, ".log");
  }
  std::vector<std::string> OnDisk(int64_t run_id) { return DiskLines(dir_ + "/logs", run_id); }
  std::vector<std::string> ReadAll(int64_t run_id) {
    auto page = store_.Read(run_id, 1, 1000);
    if (!page.ok()) return {page.status().ToString()};
    return page->lines;
  }

  std::string dir_;
  FakeClock clock_;
  RunLogStore store_;
};

// The lines "<prefix> 1" ... "<prefix> n" as logged (without their timestamps).
inline std::vector<std::string> Numbered(absl::string_view prefix, int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back(absl::StrCat(prefix, " ", i));
  return out;
}

// Drops the 24-character timestamps.
inline std::vector<std::string> Texts(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const std::string& line : lines) out.push_back(line.size() >= 24 ? line.substr(24) : line);
  return out;
}

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_LOG_TEST_UTIL_H_
