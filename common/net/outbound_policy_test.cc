#include "common/net/outbound_policy.h"

#include <string>

#include "gtest/gtest.h"

namespace jobwheel::net {
namespace {

OutboundPolicy Policy(const std::string& hosts = "", const std::string& cidrs = "",
                      const std::string& ports = "80,443", bool allow_public = true) {
  OutboundPolicyOptions o;
  o.allow_hosts = *HostAllowlist::Parse(hosts, "--allow_hosts");
  o.allow_cidrs = *ParseCidrList(cidrs, "--allow_cidrs");
  o.allow_ports = *PortList::Parse(ports, "--allow_ports");
  o.allow_public = allow_public;
  return OutboundPolicy(std::move(o));
}

absl::Status Check(const OutboundPolicy& p, const std::string& host, const std::string& ip,
                   int port) {
  return p.CheckAddress(host, *ParseIp(ip), port);
}

void ExpectRule(const absl::Status& s, const std::string& rule) {
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("refused by rule \"" + rule + "\""), std::string::npos) << s;
}

TEST(OutboundPolicyTest, PublicAddressesOnAllowedPorts) {
  OutboundPolicy p = Policy();
  EXPECT_TRUE(Check(p, "api.example.com", "93.184.216.34", 443).ok());
  EXPECT_TRUE(Check(p, "93.184.216.34", "93.184.216.34", 80).ok());
  ExpectRule(Check(p, "api.example.com", "93.184.216.34", 22), "port");
  absl::Status s = Check(p, "api.example.com", "93.184.216.34", 22);
  EXPECT_NE(s.message().find("--allow_ports (80,443)"), std::string::npos) << s;
  ExpectRule(Check(Policy("", "", "*", false), "h", "93.184.216.34", 443), "public");
  EXPECT_TRUE(Check(Policy("", "93.184.216.0/24", "*", false), "h", "93.184.216.34", 1).ok());
}

TEST(OutboundPolicyTest, InternalClassesAreRefusedNamingTheRule) {
  OutboundPolicy p = Policy();
  ExpectRule(Check(p, "127.0.0.1", "127.0.0.1", 80), "loopback");
  ExpectRule(Check(p, "localhost", "::1", 80), "loopback");
  ExpectRule(Check(p, "evil.example", "10.0.0.5", 80), "private");
  ExpectRule(Check(p, "evil.example", "fd00::5", 80), "private");
  ExpectRule(Check(p, "evil.example", "169.254.1.1", 80), "link-local");
  ExpectRule(Check(p, "169.254.169.254", "169.254.169.254", 80), "metadata");
  ExpectRule(Check(p, "evil.example", "100.100.100.200", 80), "metadata");
  ExpectRule(Check(p, "x", "0.0.0.0", 80), "unspecified");
  ExpectRule(Check(p, "x", "224.0.0.1", 80), "multicast");
  ExpectRule(Check(p, "x", "64:ff9b::a9fe:a9fe", 80), "metadata");
  absl::Status s = Check(p, "evil.example", "10.0.0.5", 80);
  EXPECT_NE(s.message().find("connection to 10.0.0.5:80 (host evil.example)"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find("--allow_cidrs"), std::string::npos) << s;
}

TEST(OutboundPolicyTest, AllowlistsOpenInternalAddresses) {
  OutboundPolicy p = Policy("api.internal, 127.0.0.1:18080", "10.1.0.0/16");
  EXPECT_TRUE(Check(p, "api.internal", "10.9.9.9", 443).ok());
  ExpectRule(Check(p, "api.internal", "10.9.9.9", 8443), "port");     // Any-port entry: ports rule.
  EXPECT_TRUE(Check(p, "127.0.0.1", "127.0.0.1", 18080).ok());        // The entry's port.
  ExpectRule(Check(p, "127.0.0.1", "127.0.0.1", 18081), "loopback");  // Class before port.
  EXPECT_TRUE(Check(p, "other.example", "10.1.2.3", 80).ok());
  ExpectRule(Check(p, "other.example", "10.2.0.1", 80), "private");
  // A wide block never opens metadata; an exact entry does.
  ExpectRule(Check(Policy("", "169.254.0.0/16"), "h", "169.254.169.254", 80), "metadata");
  ExpectRule(Check(Policy("", "0.0.0.0/0"), "h", "169.254.169.254", 80), "metadata");
  EXPECT_TRUE(Check(Policy("", "169.254.0.0/16"), "h", "169.254.1.1", 80).ok());
  EXPECT_TRUE(Check(Policy("", "169.254.169.254/32"), "h", "169.254.169.254", 80).ok());
  EXPECT_TRUE(Check(Policy("169.254.169.254"), "169.254.169.254", "169.254.169.254", 80).ok());
  // Never a destination, whatever the lists say.
  ExpectRule(Check(Policy("x", "0.0.0.0/0"), "x", "0.0.0.0", 80), "unspecified");
  ExpectRule(Check(Policy(), "169.254.169.254", "169.254.169.254", 8080), "metadata");
}

TEST(OutboundPolicyTest, MetadataNamesBeforeResolution) {
  ExpectRule(Policy().CheckName("metadata.google.internal", 80), "metadata");
  EXPECT_TRUE(Policy("metadata.google.internal").CheckName("metadata.google.internal", 80).ok());
  EXPECT_TRUE(Policy().CheckName("api.example.com", 443).ok());
  ExpectRule(Policy().CheckName("api.example.com", 8443), "port");
}

TEST(OutboundPolicyTest, Describe) {
  EXPECT_EQ(Policy("a.b,127.0.0.1:9", "10.0.0.0/8").Describe(),
            "outbound: ports 80,443; public addresses allowed; loopback, link-local, private and "
            "metadata refused except hosts [a.b,127.0.0.1:9] and CIDRs [10.0.0.0/8]");
}

}  // namespace
}  // namespace jobwheel::net
