#include "common/net/address_class.h"

#include "gtest/gtest.h"

namespace jobwheel::net {
namespace {

std::string ClassOf(const char* ip) {
  return std::string(AddressClassName(ClassifyIp(*ParseIp(ip))));
}

TEST(ClassifyIpTest, EachClass) {
  EXPECT_EQ(ClassOf("8.8.8.8"), "public");
  EXPECT_EQ(ClassOf("2606:4700::1111"), "public");
  EXPECT_EQ(ClassOf("127.0.0.1"), "loopback");
  EXPECT_EQ(ClassOf("127.255.0.9"), "loopback");
  EXPECT_EQ(ClassOf("::1"), "loopback");
  EXPECT_EQ(ClassOf("::ffff:127.0.0.1"), "loopback");
  EXPECT_EQ(ClassOf("169.254.10.20"), "link-local");
  EXPECT_EQ(ClassOf("fe80::1"), "link-local");
  for (const char* p : {"10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1",
                        "fd12::1", "fc00::1", "fec0::1"}) {
    EXPECT_EQ(ClassOf(p), "private") << p;
  }
  EXPECT_EQ(ClassOf("172.32.0.1"), "public");
  for (const char* m :
       {"169.254.169.254", "fd00:ec2::254", "100.100.100.200", "::ffff:169.254.169.254"}) {
    EXPECT_EQ(ClassOf(m), "metadata") << m;
  }
  EXPECT_EQ(ClassOf("0.0.0.0"), "unspecified");
  EXPECT_EQ(ClassOf("0.1.2.3"), "unspecified");
  EXPECT_EQ(ClassOf("::"), "unspecified");
  EXPECT_EQ(ClassOf("224.0.0.1"), "multicast");
  EXPECT_EQ(ClassOf("ff02::1"), "multicast");
  EXPECT_EQ(ClassOf("255.255.255.255"), "broadcast");
  EXPECT_EQ(ClassOf("240.0.0.1"), "reserved");
}

TEST(ClassifyIpTest, Nat64IsClassifiedByTheEmbeddedIpv4) {
  EXPECT_EQ(ClassOf("64:ff9b::a9fe:a9fe"), "metadata");  // 169.254.169.254
  EXPECT_EQ(ClassOf("64:ff9b::7f00:1"), "loopback");
  EXPECT_EQ(ClassOf("64:ff9b::808:808"), "public");
}

TEST(PredicatesTest, AsTheRegistryUsesThem) {
  EXPECT_TRUE(IsNonTargetIp(*ParseIp("0.0.0.0")));
  EXPECT_TRUE(IsNonTargetIp(*ParseIp("::")));
  EXPECT_TRUE(IsNonTargetIp(*ParseIp("239.1.1.1")));
  EXPECT_TRUE(IsNonTargetIp(*ParseIp("255.255.255.255")));
  EXPECT_FALSE(IsNonTargetIp(*ParseIp("10.0.0.1")));
  EXPECT_TRUE(IsMetadataIp(*ParseIp("169.254.169.254")));
  EXPECT_FALSE(IsMetadataIp(*ParseIp("169.254.169.253")));
  EXPECT_TRUE(IsLoopbackName("localhost"));
  EXPECT_TRUE(IsLoopbackName("a.localhost"));
  EXPECT_FALSE(IsLoopbackName("localhost.example.com"));
  EXPECT_TRUE(IsMetadataName("metadata.google.internal"));
  EXPECT_FALSE(IsMetadataName("metadata.example.com"));
}

}  // namespace
}  // namespace jobwheel::net
