#include "common/base/read_file.h"

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(ReadFileTest, ReadsTheWholeFile) {
  const std::string path = ::testing::TempDir() + "/read_file_test.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << "line one\nline two\n" << std::string(1, '\0') << "after a NUL";
  }
  auto got = ReadFileToString(path, "test_file");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, std::string("line one\nline two\n") + std::string(1, '\0') + "after a NUL");
  std::remove(path.c_str());
}

TEST(ReadFileTest, AMissingFileNamesTheSettingAndThePath) {
  auto got = ReadFileToString("/nonexistent/dir/key.pem", "tls_key");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(), "tls_key: cannot read /nonexistent/dir/key.pem");
}

}  // namespace
}  // namespace jobwheel
