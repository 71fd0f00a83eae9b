#include "common/auth/failed_auth_limiter.h"

#include "common/base/lru_map.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(LruMapTest, EvictsTheLeastRecentlyUsed) {
  LruMap<int, int> m(2);
  m.Put(1, 10);
  m.Put(2, 20);
  ASSERT_NE(m.Find(1), nullptr);  // 1 is now the most recent.
  m.Put(3, 30);                   // Evicts 2.
  EXPECT_EQ(m.Find(2), nullptr);
  ASSERT_NE(m.Find(1), nullptr);
  EXPECT_EQ(*m.Find(1), 10);
  EXPECT_EQ(*m.Find(3), 30);
  m.Put(3, 31);
  EXPECT_EQ(*m.Find(3), 31);
  EXPECT_EQ(m.size(), 2u);
  m.Erase(3);
  EXPECT_EQ(m.Find(3), nullptr);
  EXPECT_EQ(m.size(), 1u);
}

TEST(FailedAuthLimiterTest, BurstThenRefillPerSecondPerPeer) {
  FakeClock clock;
  FailedAuthLimiter::Options o;
  o.burst = 3;
  o.per_second = 2;
  FailedAuthLimiter limiter(o, clock);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(limiter.Allowed("ipv4:10.0.0.1")) << i;
    limiter.RecordFailure("ipv4:10.0.0.1");
  }
  EXPECT_FALSE(limiter.Allowed("ipv4:10.0.0.1"));
  EXPECT_TRUE(limiter.Allowed("ipv4:10.0.0.2"));  // Another peer has its own bucket.
  clock.Advance(absl::Milliseconds(499));
  EXPECT_FALSE(limiter.Allowed("ipv4:10.0.0.1"));
  clock.Advance(absl::Milliseconds(1));  // 0.5 s at 2/s: one more failure.
  EXPECT_TRUE(limiter.Allowed("ipv4:10.0.0.1"));
  limiter.RecordFailure("ipv4:10.0.0.1");
  EXPECT_FALSE(limiter.Allowed("ipv4:10.0.0.1"));
  clock.Advance(absl::Hours(1));  // Never more than the burst.
  for (int i = 0; i < 3; ++i) limiter.RecordFailure("ipv4:10.0.0.1");
  EXPECT_FALSE(limiter.Allowed("ipv4:10.0.0.1"));
}

TEST(FailedAuthLimiterTest, EmptyPeerIsNotLimitedAndPeersAreBounded) {
  FakeClock clock;
  FailedAuthLimiter::Options o;
  o.burst = 1;
  o.per_second = 0.001;
  o.max_peers = 2;
  FailedAuthLimiter limiter(o, clock);
  for (int i = 0; i < 10; ++i) limiter.RecordFailure("");
  EXPECT_TRUE(limiter.Allowed(""));
  limiter.RecordFailure("a");
  EXPECT_FALSE(limiter.Allowed("a"));
  limiter.RecordFailure("b");
  limiter.RecordFailure("c");  // Forgets a, the least recently seen.
  EXPECT_TRUE(limiter.Allowed("a"));
  EXPECT_FALSE(limiter.Allowed("c"));
}

TEST(PeerHostTest, DropsThePort) {
  EXPECT_EQ(PeerHost("ipv4:127.0.0.1:53412"), "ipv4:127.0.0.1");
  EXPECT_EQ(PeerHost("ipv6:[::1]:53412"), "ipv6:[::1]");
  // gRPC 1.51's escaped form: one peer whatever the port.
  EXPECT_EQ(PeerHost("ipv6:%5B::1%5D:1"), "ipv6:[::1]");
  EXPECT_EQ(PeerHost("ipv6:%5B2001:db8::7%5D:40000"), PeerHost("ipv6:%5B2001:db8::7%5D:40001"));
  EXPECT_EQ(PeerHost("unix:/tmp/sock"), "unix:/tmp/sock");
}

}  // namespace
}  // namespace jobwheel
