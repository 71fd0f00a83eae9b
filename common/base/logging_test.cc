#include "common/base/logging.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace jobwheel {
namespace {

// Captures stderr while `fn` logs.
std::string CaptureStderr(const std::function<void()>& fn) {
  fflush(stderr);
  char path[] = "/tmp/jwlogXXXXXX";
  int fd = mkstemp(path);
  int saved = dup(2);
  dup2(fd, 2);
  fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  unlink(path);
  return ss.str();
}

TEST(LoggingTest, JsonLinesEscapeTheMessage) {
  std::string out = CaptureStderr([] {
    InitLogging("test_json", /*json=*/true, "info");
    spdlog::info("job {} said \"hi\"\\ and\nbye", 7);
    spdlog::default_logger()->flush();
  });
  EXPECT_NE(out.find("\"component\":\"test_json\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"msg\":\"job 7 said \\\"hi\\\"\\\\ and\\nbye\"}"), std::string::npos) << out;
  // One line per record.
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

}  // namespace
}  // namespace jobwheel
