#include "common/grpc/stub_cache.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

// A stub that only remembers its channel, and counts how many were made.
struct FakeStub {
  explicit FakeStub(std::shared_ptr<grpc::Channel> c) : channel(std::move(c)) {}
  std::shared_ptr<grpc::Channel> channel;
};

class StubCacheTest : public ::testing::Test {
 protected:
  StubCache<FakeStub>::StubFactory Factory() {
    return [this](std::shared_ptr<grpc::Channel> channel) {
      made_.fetch_add(1);
      return std::make_unique<FakeStub>(std::move(channel));
    };
  }
  std::atomic<int> made_{0};
};

TEST_F(StubCacheTest, ReusesTheStubOfAnAddress) {
  StubCache<FakeStub> cache(ClientTls{}, 8, Factory());
  auto a1 = cache.Get("127.0.0.1:1");
  auto a2 = cache.Get("127.0.0.1:1");
  auto b = cache.Get("127.0.0.1:2");
  ASSERT_TRUE(a1.ok() && a2.ok() && b.ok());
  EXPECT_EQ(a1->get(), a2->get());
  EXPECT_NE(a1->get(), b->get());
  EXPECT_NE((*a1)->channel.get(), (*b)->channel.get());
  ASSERT_NE((*a1)->channel, nullptr);
  EXPECT_EQ(made_.load(), 2);
  EXPECT_EQ(cache.size(), 2u);
}

TEST_F(StubCacheTest, EvictsTheLeastRecentlyUsedAddressWhenFull) {
  StubCache<FakeStub> cache(ClientTls{}, 2, Factory());
  auto a = cache.Get("127.0.0.1:1");
  auto b = cache.Get("127.0.0.1:2");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(cache.Get("127.0.0.1:1").ok());  // a is now the most recently used.
  auto c = cache.Get("127.0.0.1:3");           // Evicts b.
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(made_.load(), 3);

  auto a_again = cache.Get("127.0.0.1:1");
  ASSERT_TRUE(a_again.ok());
  EXPECT_EQ(a_again->get(), a->get());
  EXPECT_EQ(made_.load(), 3);

  auto b_again = cache.Get("127.0.0.1:2");  // Made anew; the evicted one is still usable.
  ASSERT_TRUE(b_again.ok());
  EXPECT_NE(b_again->get(), b->get());
  EXPECT_EQ(made_.load(), 4);
  EXPECT_NE((*b)->channel, nullptr);
  EXPECT_EQ(cache.size(), 2u);
}

TEST_F(StubCacheTest, AChannelErrorIsReturnedAndNothingIsCached) {
  ClientTls tls;
  tls.ca_file = "/nonexistent/jobwheel-stub-cache-test/ca.pem";
  StubCache<FakeStub> cache(tls, 8, Factory());
  auto stub = cache.Get("127.0.0.1:1");
  EXPECT_FALSE(stub.ok());
  EXPECT_EQ(made_.load(), 0);
  EXPECT_EQ(cache.size(), 0u);
}

TEST_F(StubCacheTest, ConcurrentCallersOfOneAddressShareOneStub) {
  StubCache<FakeStub> cache(ClientTls{}, 64, Factory());
  constexpr int kThreads = 8;
  constexpr int kAddresses = 16;
  std::vector<std::vector<FakeStub*>> seen(kThreads, std::vector<FakeStub*>(kAddresses));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAddresses; ++i) {
        auto stub = cache.Get(absl::StrCat("127.0.0.1:", 1000 + i));
        seen[t][i] = stub.ok() ? stub->get() : nullptr;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(made_.load(), kAddresses);
  for (int i = 0; i < kAddresses; ++i) {
    ASSERT_NE(seen[0][i], nullptr);
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t][i], seen[0][i]) << "address " << i;
  }
}

}  // namespace
}  // namespace jobwheel
