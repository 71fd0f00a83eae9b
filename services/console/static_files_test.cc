#include "services/console/static_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace jobwheel::console {
namespace {

void Write(const std::string& path, const std::string& content) { std::ofstream(path) << content; }

class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    base_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/static_files_test_", getpid());
    root_ = base_ + "/web";
    mkdir(base_.c_str(), 0755);
    mkdir(root_.c_str(), 0755);
    mkdir((root_ + "/js").c_str(), 0755);
    mkdir((root_ + "/docs").c_str(), 0755);
    Write(root_ + "/index.html", "<!doctype html>home");
    Write(root_ + "/js/app.js", "export {};");
    Write(root_ + "/docs/index.html", "docs");
    Write(root_ + "/.secret", "hidden");
    Write(base_ + "/outside.txt", "outside the web root");
    symlink((base_ + "/outside.txt").c_str(), (root_ + "/linked.txt").c_str());
  }

  std::string base_, root_;
};

TEST_F(StaticFilesTest, ServesFilesWithTheirTypes) {
  StaticFiles files(root_);
  auto index = files.Read("/");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->body, "<!doctype html>home");
  EXPECT_EQ(index->content_type, "text/html; charset=utf-8");
  auto js = files.Read("/js/app.js");
  ASSERT_TRUE(js.ok()) << js.status();
  EXPECT_EQ(js->body, "export {};");
  EXPECT_EQ(js->content_type, "text/javascript; charset=utf-8");
  auto docs = files.Read("/docs/");
  ASSERT_TRUE(docs.ok()) << docs.status();
  EXPECT_EQ(docs->body, "docs");
}

TEST_F(StaticFilesTest, SymlinksInsideTheRootAreFollowed) {
  // Bazel's runfiles tree is symlinks; the root is trusted, the request path is checked.
  auto linked = StaticFiles(root_).Read("/linked.txt");
  ASSERT_TRUE(linked.ok()) << linked.status();
  EXPECT_EQ(linked->body, "outside the web root");
}

TEST_F(StaticFilesTest, NoDirectoryListingAndNoMissingFiles) {
  StaticFiles files(root_);
  EXPECT_EQ(files.Read("/js").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(files.Read("/js/").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(files.Read("/nope.html").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StaticFilesTest, TraversalAndHiddenFilesAreRefused) {
  StaticFiles files(root_);
  for (const char* path :
       {"/../outside.txt", "/js/../../outside.txt", "/..", "/./index.html", "/.secret",
        "//etc/passwd", "/js//app.js", "/js\\..\\index.html", "index.html", ""}) {
    auto file = files.Read(path);
    EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument) << path;
  }
  std::string with_nul("/index.html\0.png", 16);
  EXPECT_EQ(files.Read(with_nul).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StaticFilesPathTest, RelativePaths) {
  EXPECT_EQ(*StaticFiles::RelativePath("/"), "index.html");
  EXPECT_EQ(*StaticFiles::RelativePath("/a/b.js"), "a/b.js");
  EXPECT_EQ(*StaticFiles::RelativePath("/a/"), "a/index.html");
  EXPECT_EQ(*StaticFiles::RelativePath("/a..b.js"), "a..b.js");  // Dots inside a name are fine.
  EXPECT_FALSE(StaticFiles::RelativePath(absl::StrCat("/", std::string(2000, 'a'))).ok());
}

TEST(StaticFilesPathTest, ContentTypes) {
  EXPECT_EQ(StaticFiles::ContentType("a.mjs"), "text/javascript; charset=utf-8");
  EXPECT_EQ(StaticFiles::ContentType("A.JS"), "text/javascript; charset=utf-8");
  EXPECT_EQ(StaticFiles::ContentType("s.css"), "text/css; charset=utf-8");
  EXPECT_EQ(StaticFiles::ContentType("i.svg"), "image/svg+xml");
  EXPECT_EQ(StaticFiles::ContentType("i.png"), "image/png");
  EXPECT_EQ(StaticFiles::ContentType("m.json"), "application/json");
  EXPECT_EQ(StaticFiles::ContentType("f.woff2"), "font/woff2");
  EXPECT_EQ(StaticFiles::ContentType("x.bin"), "application/octet-stream");
  EXPECT_EQ(StaticFiles::ContentType("html"), "application/octet-stream");
}

}  // namespace
}  // namespace jobwheel::console
