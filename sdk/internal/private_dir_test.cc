#include "sdk/internal/private_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "common/testing/process.h"
#include "gtest/gtest.h"

namespace jobwheel::sdk {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class PrivateDirTest : public ::testing::Test {
 protected:
  PrivateDirTest()
      : dir_(jobwheel::testing::TestTempDir(
            ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    ::mkdir(dir_.c_str(), 0700);
    // A permissive umask: the modes below come from mkdir's mode, not from the umask.
    old_umask_ = ::umask(0);
  }
  ~PrivateDirTest() override { ::umask(old_umask_); }

  std::string dir_;
  mode_t old_umask_;
};

TEST_F(PrivateDirTest, CreatesEveryMissingComponent0700) {
  const std::string path = dir_ + "/a/b/c";
  ASSERT_TRUE(MakePrivateDir(path, "log_dir").ok());
  EXPECT_EQ(ModeOf(dir_ + "/a"), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/a/b"), 0700u);
  EXPECT_EQ(ModeOf(path), 0700u);
  EXPECT_TRUE(MakePrivateDir(path, "log_dir").ok());  // Idempotent.
}

TEST_F(PrivateDirTest, NarrowsAnOwnOlderDirectory) {
  const std::string path = dir_ + "/old";
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  ASSERT_EQ(ModeOf(path), 0755u);
  ASSERT_TRUE(MakePrivateDir(path, "spool_dir").ok());
  EXPECT_EQ(ModeOf(path), 0700u);
}

TEST_F(PrivateDirTest, AcceptsAWorldWritableAncestorOwnedByThisUserOrRoot) {
  // Like a Kubernetes emptyDir (0777, or 2777 with fsGroup): a warning, not a refusal.
  const std::string open_dir = dir_ + "/open";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0777), 0);
  EXPECT_TRUE(MakePrivateDir(open_dir + "/logs", "log_dir").ok());
  EXPECT_EQ(ModeOf(open_dir + "/logs"), 0700u);
  // Sticky, like /tmp.
  ASSERT_EQ(::chmod(open_dir.c_str(), 01777), 0);
  EXPECT_TRUE(MakePrivateDir(open_dir + "/spool", "spool_dir").ok());
}

TEST_F(PrivateDirTest, RefusesAFileAndAnotherUsersDirectory) {
  const std::string file = dir_ + "/file";
  std::ofstream(file) << "x";
  EXPECT_FALSE(MakePrivateDir(file, "log_dir").ok());
  if (::geteuid() != 0) GTEST_SKIP() << "planting another user's directory needs root";
  // Another user planted the predictable directory first (as in /tmp): refused, not used.
  const std::string planted = dir_ + "/planted";
  ASSERT_EQ(::mkdir(planted.c_str(), 0777), 0);
  ASSERT_EQ(::chown(planted.c_str(), 65534, 65534), 0);
  absl::Status s = MakePrivateDir(planted, "spool_dir");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("owned by uid 65534"), absl::string_view::npos) << s;
  EXPECT_EQ(ModeOf(planted), 0777u);  // Left alone.
  // And anything below a directory another user owns.
  s = MakePrivateDir(planted + "/sub", "spool_dir");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

}  // namespace
}  // namespace jobwheel::sdk
