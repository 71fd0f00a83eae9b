#include "services/registry/address_policy.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace jobwheel::registry {
namespace {

CallerIdentity Peer(const std::string& peer) {
  CallerIdentity c;
  c.peer = peer;
  return c;
}

AddressPolicy Policy(bool loopback = false, bool link_local = false,
                     const std::string& allowlist = "") {
  AddressPolicyOptions o;
  o.allow_loopback = loopback;
  o.allow_link_local = link_local;
  auto rules = ParseAddressAllowlist(allowlist, "--executor_address_allowlist");
  EXPECT_TRUE(rules.ok()) << rules.status();
  if (rules.ok()) o.allowlist = *rules;
  return AddressPolicy(o);
}

void ExpectDenied(const absl::Status& s, const std::string& part) {
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("register.address: "), std::string::npos) << s;
  EXPECT_NE(s.message().find(part), std::string::npos) << s;
}

TEST(ParseIpTest, FormsAndNormalisation) {
  ASSERT_TRUE(ParseIp("10.0.0.5").has_value());
  EXPECT_FALSE(ParseIp("10.0.0.5").value().v6);
  EXPECT_TRUE(ParseIp("[::1]").value().v6);
  EXPECT_EQ(ParseIp("::ffff:10.0.0.5"), ParseIp("10.0.0.5"));
  EXPECT_EQ(ParseIp("fe80::1%eth0"), ParseIp("fe80::1"));
  EXPECT_FALSE(ParseIp("example.com").has_value());
  EXPECT_FALSE(ParseIp("").has_value());
  EXPECT_FALSE(ParseIp("10.0.0").has_value());
}

TEST(ParsePeerIpTest, GrpcPeerStrings) {
  EXPECT_EQ(ParsePeerIp("ipv4:10.0.0.5:4711"), ParseIp("10.0.0.5"));
  EXPECT_EQ(ParsePeerIp("ipv6:[2001:db8::7]:4711"), ParseIp("2001:db8::7"));
  EXPECT_EQ(ParsePeerIp("ipv6:%5B2001:db8::7%5D:4711"), ParseIp("2001:db8::7"));
  EXPECT_EQ(ParsePeerIp("ipv6:[::ffff:10.0.0.5]:1"), ParseIp("10.0.0.5"));
  EXPECT_FALSE(ParsePeerIp("unix:/tmp/sock").has_value());
  EXPECT_FALSE(ParsePeerIp("").has_value());
}

TEST(AddressPolicyTest, PeerIpMatchIsTheCallersOwn) {
  AddressPolicy p = Policy();
  EXPECT_TRUE(p.Check("demo", "10.0.0.5:7200", Peer("ipv4:10.0.0.5:50000")).ok());
  EXPECT_TRUE(p.Check("demo", "[2001:db8::7]:7200", Peer("ipv6:[2001:db8::7]:5")).ok());
  // An IPv4 executor reaching a dual-stack listener shows as a mapped address.
  EXPECT_TRUE(p.Check("demo", "10.0.0.5:7200", Peer("ipv6:[::ffff:10.0.0.5]:5")).ok());
}

TEST(AddressPolicyTest, AnotherHostsAddressIsRefused) {
  AddressPolicy p = Policy();
  ExpectDenied(p.Check("demo", "10.0.0.9:7200", Peer("ipv4:10.0.0.5:50000")),
               "not the caller's address (the registry sees 10.0.0.5)");
  ExpectDenied(p.Check("demo", "[2001:db8::8]:7200", Peer("ipv6:[2001:db8::7]:5")),
               "not the caller's address");
  ExpectDenied(p.Check("demo", "10.0.0.9:7200", Peer("unix:/tmp/s")), "not the caller's");
}

TEST(AddressPolicyTest, AllowlistByCidrHostAndApp) {
  AddressPolicy p =
      Policy(false, false, "demo=192.168.0.0/16, demo=exec.example.com,*=10.1.2.3,v6=fd12::/16");
  const CallerIdentity nat = Peer("ipv4:203.0.113.1:4000");
  EXPECT_TRUE(p.Check("demo", "192.168.4.4:7200", nat).ok());
  EXPECT_TRUE(p.Check("demo", "EXEC.example.com.:7200", nat).ok());
  EXPECT_TRUE(p.Check("other", "10.1.2.3:7200", nat).ok());
  EXPECT_TRUE(p.Check("v6", "[fd12:1::5]:7200", nat).ok());
  ExpectDenied(p.Check("billing", "192.168.4.4:7200", nat), "allow-list it for app billing");
  ExpectDenied(p.Check("billing", "exec.example.com:7200", nat), "is a DNS name");
  ExpectDenied(p.Check("demo", "172.16.0.1:7200", nat), "not the caller's address");
}

TEST(AddressPolicyTest, AllowlistParsingErrorsNameTheFlag) {
  for (const char* bad : {"demo", "=10.0.0.0/8", "demo=", "demo=10.0.0.0/33", "demo=10.0.0.0/x",
                          "de mo=10.0.0.1", "demo=a b"}) {
    auto r = ParseAddressAllowlist(bad, "--executor_address_allowlist");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("--executor_address_allowlist"), std::string::npos);
  }
  EXPECT_TRUE(ParseAddressAllowlist("", "f").value().empty());
}

TEST(AddressPolicyTest, LoopbackDependsOnTheListenerMode) {
  const CallerIdentity local = Peer("ipv4:127.0.0.1:5000");
  ExpectDenied(Policy(false).Check("demo", "127.0.0.1:7200", local), "is loopback");
  ExpectDenied(Policy(false).Check("demo", "[::1]:7200", Peer("ipv6:[::1]:5")), "is loopback");
  ExpectDenied(Policy(false).Check("demo", "localhost:7200", local), "is loopback");
  // Not even the allowlist opens loopback.
  ExpectDenied(Policy(false, false, "demo=127.0.0.0/8").Check("demo", "127.0.0.1:1", local),
               "is loopback");
  AddressPolicy dev = Policy(true);
  EXPECT_TRUE(dev.Check("demo", "127.0.0.1:7200", local).ok());
  // Any loopback target from a loopback caller: the same machine.
  EXPECT_TRUE(dev.Check("demo", "localhost:7200", local).ok());
  EXPECT_TRUE(dev.Check("demo", "[::1]:7200", local).ok());
  EXPECT_TRUE(dev.Check("demo", "127.0.0.2:7200", Peer("ipv6:[::1]:9")).ok());
  // A remote caller still cannot point at the registry's machine.
  ExpectDenied(dev.Check("demo", "127.0.0.1:7200", Peer("ipv4:10.0.0.5:1")), "not the caller's");
}

TEST(AddressPolicyTest, LinkLocalOnlyWhenAllowedAndMetadataNever) {
  const CallerIdentity ll = Peer("ipv4:169.254.10.20:5");
  ExpectDenied(Policy().Check("demo", "169.254.10.20:7200", ll), "link-local");
  ExpectDenied(Policy().Check("demo", "[fe80::1]:7200", Peer("ipv6:[fe80::1]:5")), "link-local");
  EXPECT_TRUE(Policy(false, true).Check("demo", "169.254.10.20:7200", ll).ok());
  for (const char* md : {"169.254.169.254:80", "[fd00:ec2::254]:80", "100.100.100.200:80",
                         "[::ffff:169.254.169.254]:80"}) {
    ExpectDenied(
        Policy(true, true, "*=0.0.0.0/0,*=::/0").Check("demo", md, Peer("ipv4:169.254.169.254:5")),
        "metadata");
  }
  ExpectDenied(Policy(true, true, "*=metadata.google.internal")
                   .Check("demo", "metadata.google.internal:80", ll),
               "metadata service name");
}

TEST(AddressPolicyTest, SchemesAndNonTargetsAreRefused) {
  AddressPolicy p = Policy(true, true, "*=0.0.0.0/0");
  const CallerIdentity c = Peer("ipv4:127.0.0.1:5");
  ExpectDenied(p.Check("demo", "unix:7200", c), "gRPC unix: target");
  ExpectDenied(p.Check("demo", "UNIX-ABSTRACT:7200", c), "gRPC unix-abstract: target");
  ExpectDenied(p.Check("demo", "vsock:2", c), "vsock");
  ExpectDenied(p.Check("demo", "no-port", c), "not host:port");
  ExpectDenied(p.Check("demo", "0.0.0.0:7200", c), "unspecified");
  ExpectDenied(p.Check("demo", "[::]:7200", c), "unspecified");
  ExpectDenied(p.Check("demo", "224.0.0.1:7200", c), "multicast");
  ExpectDenied(p.Check("demo", "255.255.255.255:7200", c), "broadcast");
}

TEST(AddressPolicyTest, DnsNamesNeedACertificateOrTheAllowlist) {
  const CallerIdentity plain = Peer("ipv4:10.0.0.5:5");
  ExpectDenied(Policy().Check("demo", "exec-1.demo.svc:7200", plain), "is a DNS name");
  CallerIdentity tls = plain;
  tls.certificate_verified = true;
  tls.certificate_dns_names = {"exec-1.demo.svc", "*.demo.svc"};
  tls.certificate_ips = {"10.0.0.77"};
  EXPECT_TRUE(Policy().Check("demo", "exec-1.demo.svc:7200", tls).ok());
  EXPECT_TRUE(Policy().Check("demo", "Exec-1.Demo.Svc.:7200", tls).ok());
  // Wildcards in certificates are not honoured.
  ExpectDenied(Policy().Check("demo", "exec-2.demo.svc:7200", tls), "is a DNS name");
  // A certificate's IP SAN counts as the caller's own.
  EXPECT_TRUE(Policy().Check("demo", "10.0.0.77:7200", tls).ok());
  // Names in an unverified certificate do not.
  tls.certificate_verified = false;
  ExpectDenied(Policy().Check("demo", "exec-1.demo.svc:7200", tls), "is a DNS name");
  ExpectDenied(Policy().Check("demo", "10.0.0.77:7200", tls), "not the caller's");
}

TEST(AddressPolicyOptionsFromFlagsTest, LoopbackFollowsTheListenAddressInAutoMode) {
  auto local = AddressPolicyOptionsFromFlags("auto", false, "", "127.0.0.1:7101");
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(local->allow_loopback);
  EXPECT_TRUE(AddressPolicyOptionsFromFlags("auto", false, "", "[::1]:7101")->allow_loopback);
  EXPECT_TRUE(AddressPolicyOptionsFromFlags("auto", false, "", "localhost:0")->allow_loopback);
  EXPECT_FALSE(AddressPolicyOptionsFromFlags("auto", false, "", "0.0.0.0:7101")->allow_loopback);
  EXPECT_FALSE(AddressPolicyOptionsFromFlags("auto", false, "", "[::]:7101")->allow_loopback);
  EXPECT_FALSE(AddressPolicyOptionsFromFlags("auto", false, "", "10.0.0.2:7101")->allow_loopback);
  EXPECT_TRUE(AddressPolicyOptionsFromFlags("true", false, "", "0.0.0.0:1")->allow_loopback);
  EXPECT_FALSE(AddressPolicyOptionsFromFlags("false", false, "", "127.0.0.1:1")->allow_loopback);
  auto bad = AddressPolicyOptionsFromFlags("yes", false, "", "127.0.0.1:1");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--allow_loopback_executors"), std::string::npos);
  auto list = AddressPolicyOptionsFromFlags("auto", true, "demo=10.0.0.0/8,x", "0.0.0.0:1");
  EXPECT_NE(list.status().message().find("--executor_address_allowlist"), std::string::npos);
  auto ok = AddressPolicyOptionsFromFlags("false", true, "demo=10.0.0.0/8", "0.0.0.0:1");
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->allow_link_local);
  EXPECT_EQ(ok->allowlist.size(), 1u);
  EXPECT_EQ(DescribeAddressPolicy(*ok),
            "executor addresses: the caller's own; loopback refused, link-local allowed, 1 "
            "allowlist entries");
}

TEST(IsLoopbackHostTest, ListenHosts) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("[::1]"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("[::]"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.5"));
  EXPECT_FALSE(IsLoopbackHost(""));
}

}  // namespace
}  // namespace jobwheel::registry
