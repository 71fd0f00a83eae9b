#include "common/net/url.h"

#include "gtest/gtest.h"

namespace jobwheel::net {
namespace {

std::string Str(absl::string_view text) {
  absl::StatusOr<Url> u = ParseHttpUrl(text);
  return u.ok() ? u->ToString() : "error: " + std::string(u.status().message());
}

TEST(ParseHttpUrlTest, PartsAndCanonicalForm) {
  absl::StatusOr<Url> u = ParseHttpUrl("HTTPS://API.Example.com./v1/x?a=1#frag");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "api.example.com");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->path, "/v1/x?a=1");
  EXPECT_EQ(u->ToString(), "https://api.example.com/v1/x?a=1");
  EXPECT_EQ(u->Origin(), "https://api.example.com:443");
  EXPECT_EQ(Str("http://h:80"), "http://h/");
  EXPECT_EQ(Str("http://h:8080?q"), "http://h:8080/?q");
  EXPECT_EQ(Str("http://[::ffff:127.0.0.1]:9/"), "http://127.0.0.1:9/");
  EXPECT_EQ(Str("http://[2001:db8::1]/"), "http://[2001:db8::1]/");
  EXPECT_EQ(ParseHttpUrl("http://[2001:db8::1]:81/")->Authority(), "[2001:db8::1]:81");
  EXPECT_TRUE(ParseHttpUrl("http://10.0.0.1/")->ip.has_value());
  EXPECT_FALSE(ParseHttpUrl("http://h/")->ip.has_value());
}

TEST(ParseHttpUrlTest, Refusals) {
  EXPECT_NE(Str("ftp://x/").find("must start with https:// or http://"), std::string::npos);
  EXPECT_NE(Str("file:///etc/passwd").find("must start with"), std::string::npos);
  EXPECT_NE(Str("http:/x").find("must start with"), std::string::npos);
  EXPECT_NE(Str("http://").find("missing host"), std::string::npos);
  EXPECT_NE(Str("https:///x").find("missing host"), std::string::npos);
  EXPECT_NE(Str("http://u:p@h/").find("user info"), std::string::npos);
  EXPECT_NE(Str("http://h:99999/").find("bad port"), std::string::npos);
  EXPECT_NE(Str("http://h:0/").find("bad port"), std::string::npos);
  EXPECT_NE(Str("http://a b/").find("spaces"), std::string::npos);
  EXPECT_NE(Str("http://h/\r\nX: y").find("control"), std::string::npos);
  EXPECT_NE(Str("http://h\\@evil/").find("backslash"), std::string::npos);
  EXPECT_NE(Str("http://127.1/").find("bad host"), std::string::npos);
  EXPECT_NE(Str("http://0x7f000001/").find("bad host"), std::string::npos);
  EXPECT_NE(Str("http://h\xc3\xa9/").find("non-ASCII"), std::string::npos);
}

TEST(ResolveReferenceTest, RedirectLocations) {
  const Url base = *ParseHttpUrl("http://a.example:8080/dir/page?x=1");
  auto resolve = [&](absl::string_view loc) {
    absl::StatusOr<Url> u = ResolveReference(base, loc);
    return u.ok() ? u->ToString() : "error: " + std::string(u.status().message());
  };
  EXPECT_EQ(resolve("https://b.example/p"), "https://b.example/p");
  EXPECT_EQ(resolve("//c.example/q"), "http://c.example/q");
  EXPECT_EQ(resolve("/abs?y=2"), "http://a.example:8080/abs?y=2");
  EXPECT_EQ(resolve("?y=2"), "http://a.example:8080/dir/page?y=2");
  EXPECT_EQ(resolve("other"), "http://a.example:8080/dir/other");
  EXPECT_EQ(resolve("../up#f"), "http://a.example:8080/up");
  EXPECT_EQ(resolve("./x/../y"), "http://a.example:8080/dir/y");
  EXPECT_EQ(resolve("../../../../z"), "http://a.example:8080/z");
  EXPECT_EQ(resolve("http://169.254.169.254/latest"), "http://169.254.169.254/latest");
  EXPECT_NE(resolve("file:///etc/passwd").find("must start with"), std::string::npos);
  EXPECT_NE(resolve("gopher://x/").find("must start with"), std::string::npos);
  EXPECT_NE(resolve("").find("empty"), std::string::npos);
}

}  // namespace
}  // namespace jobwheel::net
