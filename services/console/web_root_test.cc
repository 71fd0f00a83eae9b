#include "services/console/web_root.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace jobwheel::console {
namespace {

TEST(WebRootTest, PrefersTheRunfilesBesideTheBinary) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string base = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/web_root_", getpid());
  const std::string exe = base + "/console";
  const std::string web = exe + ".runfiles/jobwheel/services/console/web";
  std::string dir;
  for (const char* part :
       {"", "/console.runfiles", "/console.runfiles/jobwheel",
        "/console.runfiles/jobwheel/services", "/console.runfiles/jobwheel/services/console",
        "/console.runfiles/jobwheel/services/console/web"}) {
    mkdir((base + part).c_str(), 0755);
  }
  EXPECT_EQ(DefaultWebRoot(exe, "/elsewhere"), web);
  EXPECT_EQ(DefaultWebRoot(exe, ""), web);
}

TEST(WebRootTest, FallsBackToRunfilesDir) {
  EXPECT_EQ(DefaultWebRoot("/no/such/console", "/r"), "/r/jobwheel/services/console/web");
  EXPECT_EQ(DefaultWebRoot("/no/such/console", ""),
            "/no/such/console.runfiles/jobwheel/services/console/web");
}

}  // namespace
}  // namespace jobwheel::console
