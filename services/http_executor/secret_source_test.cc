#include "services/http_executor/secret_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "gtest/gtest.h"

namespace jobwheel::http_executor {
namespace {

class SecretSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/secrets";
    mkdir(dir_.c_str(), 0700);
    std::ofstream(dir_ + "/billing") << "s3cret\n";
    std::ofstream(dir_ + "/crlf") << "a\r\nb";
    std::ofstream(std::string(tmp != nullptr ? tmp : "/tmp") + "/outside") << "nope";
    unlink((dir_ + "/link").c_str());
    symlink("billing", (dir_ + "/link").c_str());
    mkdir((dir_ + "/sub").c_str(), 0700);
  }

  SecretSource Source(const std::string& dir, const std::string& prefix) {
    return SecretSource(SecretSource::Options{dir, prefix}, [this](const char* name) {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    });
  }

  static SecretRef File(const std::string& name, const std::string& prefix = "") {
    return SecretRef{"Authorization", SecretRef::Source::kFile, name, prefix};
  }
  static SecretRef Env(const std::string& name) {
    return SecretRef{"X-Key", SecretRef::Source::kEnv, name, ""};
  }

  std::string dir_;
  std::map<std::string, std::string> env_ = {{"JOBWHEEL_HTTP_SECRET_KEY", "k1"},
                                             {"HOME_SECRET", "other"}};
};

TEST_F(SecretSourceTest, FilesInTheDirectoryOnly) {
  SecretSource s = Source(dir_, "");
  EXPECT_EQ(s.Read(File("billing", "Bearer ")).value(), "Bearer s3cret");
  for (const char* bad :
       {"../outside", "/etc/passwd", "sub/x", "..", ".", "", "link", "sub", "missing"}) {
    absl::StatusOr<std::string> v = s.Read(File(bad));
    EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition) << bad;
    EXPECT_NE(v.status().message().find("secret header Authorization"), std::string::npos);
  }
  // A value with CR/LF inside is refused (header injection), and never shown.
  absl::StatusOr<std::string> crlf = s.Read(File("crlf"));
  EXPECT_FALSE(crlf.ok());
  EXPECT_EQ(crlf.status().message().find("a\r"), std::string::npos);
  // No directory configured: no file is read.
  absl::StatusOr<std::string> off = Source("", "").Read(File("billing"));
  EXPECT_NE(off.status().message().find("--secret_dir is not set"), std::string::npos);
}

TEST_F(SecretSourceTest, EnvironmentVariablesWithThePrefixOnly) {
  SecretSource s = Source("", "JOBWHEEL_HTTP_SECRET_");
  EXPECT_EQ(s.Read(Env("JOBWHEEL_HTTP_SECRET_KEY")).value(), "k1");
  absl::StatusOr<std::string> other = s.Read(Env("HOME_SECRET"));
  EXPECT_NE(other.status().message().find("must start with --secret_env_prefix"),
            std::string::npos);
  EXPECT_EQ(other.status().message().find("other"), std::string::npos);  // Never the value.
  EXPECT_FALSE(s.Read(Env("JOBWHEEL_HTTP_SECRET_")).ok());
  EXPECT_NE(s.Read(Env("JOBWHEEL_HTTP_SECRET_NONE")).status().message().find("not set"),
            std::string::npos);
  EXPECT_NE(Source("", "")
                .Read(Env("JOBWHEEL_HTTP_SECRET_KEY"))
                .status()
                .message()
                .find("--secret_env_prefix is not set"),
            std::string::npos);
}

}  // namespace
}  // namespace jobwheel::http_executor
