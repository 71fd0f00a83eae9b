#include "sdk/internal/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/testing/process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwheel::sdk {
namespace {

using ::testing::HasSubstr;

std::string Dir() {
  const std::string dir = jobwheel::testing::TestTempDir(
      ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(FileIoTest, WritesAtThePositionOrAtAnOffsetAndReadsBack) {
  const std::string path = Dir() + "/f";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd.valid());
  ASSERT_TRUE(WriteAll(fd.get(), "hello world", path).ok());
  ASSERT_TRUE(WriteAll(fd.get(), "W", path, 6).ok());
  auto read = ReadAt(fd.get(), 6, 100, path);  // Fewer bytes at the end of the file.
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "World");
  auto whole = ReadFile(path);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, "hello World");
  char buffer[5];
  ASSERT_EQ(::lseek(fd.get(), 0, SEEK_SET), 0);
  EXPECT_EQ(ReadSome(fd.get(), buffer, sizeof(buffer)), 5);
  EXPECT_EQ(std::string(buffer, 5), "hello");
}

TEST(FileIoTest, ErrorsNameTheFile) {
  const std::string missing = Dir() + "/missing";
  auto read = ReadFile(missing);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr(missing));
  absl::Status st = WriteAll(-1, "x", "nowhere");
  EXPECT_THAT(std::string(st.message()), HasSubstr("write nowhere"));
  EXPECT_FALSE(FsyncDir(missing).ok());
}

TEST(FileIoTest, UniqueFdClosesAndMoves) {
  const std::string path = Dir() + "/f";
  int raw = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(raw, 0);
  {
    UniqueFd a(raw);
    UniqueFd b(std::move(a));
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(b.get(), raw);
  }
  EXPECT_NE(::fcntl(raw, F_GETFD), 0);  // Closed.
}

TEST(FileIoTest, ReplaceFileSwapsTheWholeContent) {
  const std::string dir = Dir();
  const std::string path = dir + "/script.sh";
  ASSERT_TRUE(ReplaceFile(path, "old content, longer").ok());
  // A stale temporary file from a crash does not get in the way.
  ASSERT_TRUE(ReplaceFile(path + ".tmp", "stale").ok());
  ASSERT_TRUE(ReplaceFile(path, "new", 0700).ok());
  EXPECT_EQ(ReadFile(path).value_or("?"), "new");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

}  // namespace
}  // namespace jobwheel::sdk
