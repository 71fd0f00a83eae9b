#include "common/net/grpc_peer.h"

#include "gtest/gtest.h"

namespace jobwheel::net {
namespace {

TEST(ParsePeerIpTest, GrpcPeerStrings) {
  EXPECT_EQ(ParsePeerIp("ipv4:10.0.0.5:4711"), ParseIp("10.0.0.5"));
  EXPECT_EQ(ParsePeerIp("ipv6:[2001:db8::7]:4711"), ParseIp("2001:db8::7"));
  EXPECT_EQ(ParsePeerIp("ipv6:%5B2001:db8::7%5D:4711"), ParseIp("2001:db8::7"));
  EXPECT_EQ(ParsePeerIp("ipv6:[::ffff:10.0.0.5]:1"), ParseIp("10.0.0.5"));
  EXPECT_FALSE(ParsePeerIp("unix:/tmp/sock").has_value());
  EXPECT_FALSE(ParsePeerIp("ipv4:nocolon").has_value());
  EXPECT_FALSE(ParsePeerIp("").has_value());
}

}  // namespace
}  // namespace jobwheel::net
