#include "services/dispatcher/router.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/dispatcher/consistent_hash.h"
#include "services/dispatcher/fake_executor_clients.h"

namespace jobwheel::dispatcher {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Addresses(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(absl::StrCat("10.0.0.", 10 + i, ":7200"));
  return out;  // Already sorted (same length).
}

class RouterTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  std::mt19937_64 gen_{42};
  FakeExecutorClients probes_;
  Router router_{clock_, gen_, probes_};
  const std::vector<std::string> three_ = Addresses(3);

  std::string One(int64_t job, v1::RoutingStrategy s, const std::vector<std::string>& a) {
    RouteDecision d = router_.Route(job, "app", s, a);
    EXPECT_EQ(d.targets.size(), 1u) << d.message;
    return d.targets.empty() ? "" : d.targets[0].address;
  }
};

TEST_F(RouterTest, FirstAndLast) {
  EXPECT_EQ(One(1, v1::ROUTING_STRATEGY_FIRST, three_), three_[0]);
  EXPECT_EQ(One(1, v1::ROUTING_STRATEGY_UNSPECIFIED, three_), three_[0]);
  EXPECT_EQ(One(1, v1::ROUTING_STRATEGY_LAST, three_), three_[2]);
  RouteDecision d = router_.Route(1, "app", v1::ROUTING_STRATEGY_LAST, three_);
  EXPECT_EQ(d.message, "route LAST over 3 executors → 10.0.0.12:7200");
  EXPECT_EQ(d.targets[0].shard_index, 0);
  EXPECT_EQ(d.targets[0].shard_total, 1);
}

TEST_F(RouterTest, NoCandidatesFails) {
  RouteDecision d = router_.Route(1, "app", v1::ROUTING_STRATEGY_ROUND, {});
  EXPECT_FALSE(d.ok());
  EXPECT_THAT(d.message, HasSubstr("no candidate"));
}

TEST_F(RouterTest, RoundCyclesEvenlyPerJob) {
  std::map<std::string, int> counts;
  std::string prev;
  for (int i = 0; i < 3000; ++i) {
    const std::string a = One(7, v1::ROUTING_STRATEGY_ROUND, three_);
    EXPECT_NE(a, prev);
    prev = a;
    ++counts[a];
  }
  for (const std::string& a : three_) EXPECT_EQ(counts[a], 1000) << a;
  // Another job has its own counter: its first pick does not disturb job 7's cycle.
  const std::string next7_expected =
      three_[(std::find(three_.begin(), three_.end(), prev) - three_.begin() + 1) % 3];
  One(8, v1::ROUTING_STRATEGY_ROUND, three_);
  EXPECT_EQ(One(7, v1::ROUTING_STRATEGY_ROUND, three_), next7_expected);
}

TEST_F(RouterTest, RoundStartIsRandomAndDeterministicPerSeed) {
  std::set<std::string> firsts;
  for (int64_t job = 1; job <= 30; ++job)
    firsts.insert(One(job, v1::ROUTING_STRATEGY_ROUND, three_));
  EXPECT_EQ(firsts.size(), 3u);  // Random starts spread the first fires of many jobs.
  std::mt19937_64 g1{7}, g2{7};
  Router r1(clock_, g1, probes_), r2(clock_, g2, probes_);
  for (int64_t job = 1; job <= 20; ++job) {
    EXPECT_EQ(r1.Route(job, "app", v1::ROUTING_STRATEGY_ROUND, three_).targets[0].address,
              r2.Route(job, "app", v1::ROUTING_STRATEGY_ROUND, three_).targets[0].address);
  }
}

TEST_F(RouterTest, RoundStateResetsDaily) {
  One(7, v1::ROUTING_STRATEGY_ROUND, three_);
  clock_.Advance(absl::Hours(25));
  // After the reset the job restarts from a random start and still cycles.
  std::map<std::string, int> counts;
  for (int i = 0; i < 300; ++i) ++counts[One(7, v1::ROUTING_STRATEGY_ROUND, three_)];
  for (const std::string& a : three_) EXPECT_EQ(counts[a], 100);
}

TEST_F(RouterTest, RandomIsDeterministicPerSeedAndCoversAll) {
  std::mt19937_64 g1{99}, g2{99};
  Router r1(clock_, g1, probes_), r2(clock_, g2, probes_);
  std::map<std::string, int> counts;
  for (int i = 0; i < 300; ++i) {
    const std::string a =
        r1.Route(1, "app", v1::ROUTING_STRATEGY_RANDOM, three_).targets[0].address;
    EXPECT_EQ(a, r2.Route(1, "app", v1::ROUTING_STRATEGY_RANDOM, three_).targets[0].address);
    ++counts[a];
  }
  for (const std::string& a : three_) {
    EXPECT_GT(counts[a], 60) << a;
    EXPECT_LT(counts[a], 140) << a;
  }
}

TEST_F(RouterTest, ConsistentHashSticksAndMovesMinimally) {
  const std::vector<std::string> ten = Addresses(10);
  std::map<int64_t, std::string> before;
  std::map<std::string, int> load;
  for (int64_t job = 1; job <= 2000; ++job) {
    before[job] = One(job, v1::ROUTING_STRATEGY_CONSISTENT_HASH, ten);
    ++load[before[job]];
    // Sticky: the same job always lands on the same executor, on any router instance.
    EXPECT_EQ(One(job, v1::ROUTING_STRATEGY_CONSISTENT_HASH, ten), before[job]);
  }
  for (const std::string& a : ten) {
    EXPECT_GT(load[a], 100) << a;  // 200 on average; 100 virtual nodes keep it balanced.
    EXPECT_LT(load[a], 320) << a;
  }
  std::vector<std::string> nine = ten;
  const std::string removed = nine[4];
  nine.erase(nine.begin() + 4);
  int moved = 0;
  for (int64_t job = 1; job <= 2000; ++job) {
    const std::string now = One(job, v1::ROUTING_STRATEGY_CONSISTENT_HASH, nine);
    if (before[job] != removed) {
      EXPECT_EQ(now, before[job]) << "job " << job << " moved although its executor stayed";
    } else {
      EXPECT_NE(now, removed);
      ++moved;
    }
  }
  EXPECT_EQ(moved, load[removed]);  // Only the removed executor's jobs moved (~10%).
}

TEST(ConsistentHashTest, StableHashIsStable) {
  // Pinned values: every replica and release must agree, or jobs would hop between executors.
  EXPECT_EQ(StableHash64(""), StableHash64(""));
  EXPECT_NE(StableHash64("SHARD-a-NODE-0"), StableHash64("SHARD-a-NODE-1"));
  ConsistentHashRing ring({"a:1", "b:1"});
  EXPECT_EQ(ring.Pick(StableHash64("JOB-1")),
            ConsistentHashRing({"a:1", "b:1"}).Pick(StableHash64("JOB-1")));
}

TEST_F(RouterTest, LeastFrequentlyUsedBalancesAndFavoursNewcomers) {
  std::map<std::string, int> counts;
  for (int i = 0; i < 300; ++i)
    ++counts[One(3, v1::ROUTING_STRATEGY_LEAST_FREQUENTLY_USED, three_)];
  // Initial counts are random in [0, 3): after 300 picks each has 100 ± 3.
  for (const std::string& a : three_) {
    EXPECT_GE(counts[a], 97) << a;
    EXPECT_LE(counts[a], 103) << a;
  }
  // A new executor starts with a small count, so it is the least used for a while.
  std::vector<std::string> four = Addresses(4);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(One(3, v1::ROUTING_STRATEGY_LEAST_FREQUENTLY_USED, four), four[3]);
  }
}

TEST_F(RouterTest, LeastRecentlyUsedPicksEldest) {
  // Fresh: insertion (address) order, then each pick moves to the recent end.
  EXPECT_EQ(One(5, v1::ROUTING_STRATEGY_LEAST_RECENTLY_USED, three_), three_[0]);
  EXPECT_EQ(One(5, v1::ROUTING_STRATEGY_LEAST_RECENTLY_USED, three_), three_[1]);
  EXPECT_EQ(One(5, v1::ROUTING_STRATEGY_LEAST_RECENTLY_USED, three_), three_[2]);
  EXPECT_EQ(One(5, v1::ROUTING_STRATEGY_LEAST_RECENTLY_USED, three_), three_[0]);
  // A newcomer joins at the recent end; a leaver is forgotten.
  std::vector<std::string> changed = {three_[1], three_[2], "10.0.0.9:7200"};
  std::sort(changed.begin(), changed.end());
  EXPECT_EQ(One(5, v1::ROUTING_STRATEGY_LEAST_RECENTLY_USED, changed), three_[1]);
  EXPECT_EQ(One(5, v1::ROUTING_STRATEGY_LEAST_RECENTLY_USED, changed), three_[2]);
  EXPECT_EQ(One(5, v1::ROUTING_STRATEGY_LEAST_RECENTLY_USED, changed), "10.0.0.9:7200");
  // Per job: another job starts fresh.
  EXPECT_EQ(One(6, v1::ROUTING_STRATEGY_LEAST_RECENTLY_USED, three_), three_[0]);
}

TEST_F(RouterTest, FailoverSkipsExecutorsThatDoNotAnswer) {
  probes_.SetDown(three_[0], true);
  RouteDecision d = router_.Route(1, "app", v1::ROUTING_STRATEGY_FAILOVER, three_);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.targets[0].address, three_[1]);
  EXPECT_THAT(d.message, HasSubstr("→ 10.0.0.11:7200"));
  EXPECT_THAT(d.message, HasSubstr("skipped 10.0.0.10:7200 (beat: UNAVAILABLE"));
  for (const auto& a : three_) probes_.SetDown(a, true);
  clock_.Advance(absl::Seconds(3));  // Past the failed-probe memory.
  d = router_.Route(1, "app", v1::ROUTING_STRATEGY_FAILOVER, three_);
  EXPECT_FALSE(d.ok());
  EXPECT_THAT(d.message, HasSubstr("no executor answered Beat"));
}

TEST_F(RouterTest, FailoverRemembersFailedBeatsBriefly) {
  probes_.SetDown(three_[0], true);
  ASSERT_EQ(One(1, v1::ROUTING_STRATEGY_FAILOVER, three_), three_[1]);
  // Within the memory the dead executor is skipped without a call, even if it came back.
  probes_.SetDown(three_[0], false);
  RouteDecision d = router_.Route(2, "app", v1::ROUTING_STRATEGY_FAILOVER, three_);
  EXPECT_EQ(d.targets[0].address, three_[1]);
  EXPECT_THAT(d.message, HasSubstr("10.0.0.10:7200 (beat failed 0 ago)"));
  clock_.Advance(absl::Seconds(3));
  EXPECT_EQ(One(3, v1::ROUTING_STRATEGY_FAILOVER, three_), three_[0]);
}

TEST_F(RouterTest, BusyoverSkipsBusyExecutors) {
  probes_.SetBusy(three_[0], true);
  probes_.SetDown(three_[1], true);
  RouteDecision d = router_.Route(9, "app", v1::ROUTING_STRATEGY_BUSYOVER, three_);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.targets[0].address, three_[2]);
  EXPECT_THAT(d.message, HasSubstr("10.0.0.10:7200 (busy: running 1"));
  probes_.SetBusy(three_[2], true);
  d = router_.Route(9, "app", v1::ROUTING_STRATEGY_BUSYOVER, three_);
  EXPECT_FALSE(d.ok());
  EXPECT_THAT(d.message, HasSubstr("no executor is idle for job 9"));
}

TEST_F(RouterTest, ShardingBroadcastOneRunPerExecutorInOrder) {
  RouteDecision d = router_.Route(1, "app", v1::ROUTING_STRATEGY_SHARDING_BROADCAST, three_);
  ASSERT_EQ(d.targets.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(d.targets[i].address, three_[i]);
    EXPECT_EQ(d.targets[i].shard_index, i);
    EXPECT_EQ(d.targets[i].shard_total, 3);
  }
  // A retried shard goes back to the executor at its index, or the first when the set shrank.
  d = router_.Route(1, "app", v1::ROUTING_STRATEGY_SHARDING_BROADCAST, three_, 1, 3);
  ASSERT_EQ(d.targets.size(), 1u);
  EXPECT_EQ(d.targets[0].address, three_[1]);
  EXPECT_EQ(d.targets[0].shard_index, 1);
  d = router_.Route(1, "app", v1::ROUTING_STRATEGY_SHARDING_BROADCAST, three_, 4, 5);
  EXPECT_EQ(d.targets[0].address, three_[0]);
  EXPECT_EQ(d.targets[0].shard_index, 4);
  EXPECT_EQ(d.targets[0].shard_total, 5);
}

TEST_F(RouterTest, ManualShardKeepsShardOnSingleRoute) {
  RouteDecision d = router_.Route(1, "app", v1::ROUTING_STRATEGY_LAST, three_, 2, 4);
  ASSERT_EQ(d.targets.size(), 1u);
  EXPECT_EQ(d.targets[0].address, three_[2]);
  EXPECT_EQ(d.targets[0].shard_index, 2);
  EXPECT_EQ(d.targets[0].shard_total, 4);
}

TEST(StrategyNameTest, Names) {
  EXPECT_EQ(StrategyName(v1::ROUTING_STRATEGY_CONSISTENT_HASH), "consistent_hash");
  EXPECT_EQ(StrategyName(v1::ROUTING_STRATEGY_UNSPECIFIED), "first");
}

}  // namespace
}  // namespace jobwheel::dispatcher
