#include "common/auth/insecure_dev.h"

#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(InsecureDevTest, LoopbackAddressesAreLocal) {
  for (const char* a :
       {"127.0.0.1:7100", "127.1.2.3:0", "localhost:7100", "LOCALHOST:1", "[::1]:7100", "::1",
        "[::ffff:127.0.0.1]:7100", "unix:/tmp/x.sock", "unix-abstract:jw", "127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackListenAddress(a)) << a;
  }
}

TEST(InsecureDevTest, WildcardsOtherHostsAndJunkAreNot) {
  for (const char* a : {"0.0.0.0:7100", "[::]:7100", ":7100", "10.0.0.5:7100", "192.168.1.1:80",
                        "128.0.0.1:1", "scheduler:7100", "localhost.evil:1", "[::ffff:10.0.0.1]:1",
                        "[fe80::1]:1", "", "[::1", "dns:///x:1"}) {
    EXPECT_FALSE(IsLoopbackListenAddress(a)) << a;
  }
}

TEST(InsecureDevTest, RefusedOnlyWithInsecureDevOffLoopback) {
  EXPECT_TRUE(CheckInsecureDevListen(false, "0.0.0.0:7100").ok());
  EXPECT_TRUE(CheckInsecureDevListen(true, "127.0.0.1:7100").ok());
  absl::Status s = CheckInsecureDevListen(true, "0.0.0.0:7100");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--insecure_dev"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("--listen=0.0.0.0:7100"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("loopback"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace jobwheel
