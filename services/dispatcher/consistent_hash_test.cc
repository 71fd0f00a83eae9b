// Pins CONSISTENT_HASH routing to literal values: a change of the hash, the ring's point names
// or the key format would silently move every consistent-hash job to another executor on
// upgrade, so it must fail here first.
#include "services/dispatcher/consistent_hash.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace jobwheel::dispatcher {
namespace {

TEST(StableHash64Test, LiteralValues) {
  EXPECT_EQ(StableHash64(""), 17280346270528514342ULL);
  EXPECT_EQ(StableHash64("a"), 9413272369427828315ULL);
  EXPECT_EQ(StableHash64("JOB-1"), 13469428439474631704ULL);
  EXPECT_EQ(StableHash64("SHARD-10.0.0.1:9999-NODE-0"), 2503788293226836741ULL);
}

// The executor (by the last digit of its host) that jobs 1..24 go to.
std::string Picks(ConsistentHashRings& rings, const std::vector<std::string>& addresses) {
  std::string out;
  for (int64_t job = 1; job <= 24; ++job) {
    const std::string address = rings.Pick(job, addresses);
    out += address.substr(7, 1);
  }
  return out;
}

TEST(ConsistentHashRingsTest, LiteralPicksForThreeExecutors) {
  ConsistentHashRings rings;
  EXPECT_EQ(Picks(rings, {"10.0.0.1:9999", "10.0.0.2:9999", "10.0.0.3:9999"}),
            "122121322232322133133121");
}

TEST(ConsistentHashRingsTest, AFourthExecutorTakesOnlyItsShare) {
  ConsistentHashRings rings;
  // Versus three executors, only jobs 8 and 15 move, and only to the new executor.
  EXPECT_EQ(Picks(rings, {"10.0.0.1:9999", "10.0.0.2:9999", "10.0.0.3:9999", "10.0.0.4:9999"}),
            "122121342232324133133121");
}

}  // namespace
}  // namespace jobwheel::dispatcher
