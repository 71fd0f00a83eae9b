#include "services/registry/executor_view.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace jobwheel::registry {
namespace {

v1::Executor Exec(const std::string& app, const std::string& address,
                  const std::string& replica = "r1") {
  v1::Executor e;
  e.set_app(app);
  e.set_address(address);
  e.add_handlers("echo");
  e.set_registry_replica(replica);
  return e;
}

std::vector<std::string> Addresses(const v1::WatchExecutorsResponse& r) {
  std::vector<std::string> out;
  for (const auto& e : r.executors()) out.push_back(e.address());
  return out;
}

class ExecutorViewTest : public ::testing::Test {
 protected:
  prometheus::Registry prom_;
  RegistryMetrics metrics_{prom_};
  ExecutorView view_{metrics_, 100};
  std::vector<v1::WatchExecutorsResponse> all_, demo_;

  void SubscribeBoth() {
    view_.Subscribe("", [this](const v1::WatchExecutorsResponse& e) { all_.push_back(e); });
    view_.Subscribe("demo", [this](const v1::WatchExecutorsResponse& e) { demo_.push_back(e); });
  }
  double Gauge(const std::string& app) {
    return metrics_.executors_online.Add({{"app", app}}).Value();
  }
};

TEST_F(ExecutorViewTest, SnapshotThenDeltasWithIncreasingVersions) {
  view_.Reset({Exec("demo", "h:1"), Exec("other", "o:1")}, {});
  SubscribeBoth();
  ASSERT_EQ(all_.size(), 1u);
  EXPECT_EQ(all_[0].type(), v1::WATCH_EVENT_TYPE_SNAPSHOT);
  EXPECT_EQ(all_[0].executors_size(), 2);
  ASSERT_EQ(demo_.size(), 1u);
  EXPECT_EQ(Addresses(demo_[0]), std::vector<std::string>{"h:1"});
  const int64_t v0 = demo_[0].version();

  view_.ApplyExecutors({{"demo", "h:2"}}, {Exec("demo", "h:2")});
  ASSERT_EQ(demo_.size(), 2u);
  EXPECT_EQ(demo_[1].type(), v1::WATCH_EVENT_TYPE_UPSERT);
  EXPECT_EQ(Addresses(demo_[1]), std::vector<std::string>{"h:2"});
  EXPECT_GT(demo_[1].version(), v0);

  view_.ApplyExecutors({{"other", "o:1"}}, {});  // Not demo's business.
  EXPECT_EQ(demo_.size(), 2u);
  ASSERT_EQ(all_.size(), 3u);
  EXPECT_EQ(all_[2].type(), v1::WATCH_EVENT_TYPE_REMOVE);

  view_.ApplyExecutors({{"demo", "h:1"}}, {});
  ASSERT_EQ(demo_.size(), 3u);
  EXPECT_EQ(demo_[2].type(), v1::WATCH_EVENT_TYPE_REMOVE);
  EXPECT_EQ(Addresses(demo_[2]), std::vector<std::string>{"h:1"});
  EXPECT_GT(demo_[2].version(), demo_[1].version());
  EXPECT_EQ(Gauge("demo"), 1);
  EXPECT_EQ(Gauge("other"), 0);
}

TEST_F(ExecutorViewTest, UnchangedRowsEmitNothingChangedOnesUpsert) {
  view_.Reset({Exec("demo", "h:1")}, {});
  SubscribeBoth();
  view_.ApplyExecutors({{"demo", "h:1"}}, {Exec("demo", "h:1")});
  EXPECT_EQ(demo_.size(), 1u);
  // Re-registered through another replica.
  view_.ApplyExecutors({{"demo", "h:1"}}, {Exec("demo", "h:1", "r2")});
  ASSERT_EQ(demo_.size(), 2u);
  EXPECT_EQ(demo_[1].type(), v1::WATCH_EVENT_TYPE_UPSERT);
  EXPECT_EQ(demo_[1].executors(0).registry_replica(), "r2");
}

TEST_F(ExecutorViewTest, ManualAppsExposeTheirAddresses) {
  view_.Reset({Exec("demo", "h:1")}, {});
  SubscribeBoth();
  view_.ApplyApps({"demo"}, {AppConfig{"demo", v1::ADDRESS_TYPE_MANUAL, {"m:1", "m:2"}}});
  ASSERT_EQ(demo_.size(), 3u);
  EXPECT_EQ(demo_[1].type(), v1::WATCH_EVENT_TYPE_REMOVE);
  EXPECT_EQ(Addresses(demo_[1]), std::vector<std::string>{"h:1"});
  EXPECT_EQ(demo_[2].type(), v1::WATCH_EVENT_TYPE_UPSERT);
  EXPECT_EQ(Addresses(demo_[2]), (std::vector<std::string>{"m:1", "m:2"}));
  EXPECT_EQ(demo_[2].executors(0).handlers_size(), 0);
  // Registered executors of a manual app change nothing for watchers...
  view_.ApplyExecutors({{"demo", "h:3"}}, {Exec("demo", "h:3")});
  EXPECT_EQ(demo_.size(), 3u);
  // ...but are still reported as registered (online_addresses).
  EXPECT_EQ(view_.RegisteredAddresses("demo"), (std::vector<std::string>{"h:1", "h:3"}));
  EXPECT_EQ(view_.List("demo").size(), 2u);
  // Back to AUTO.
  view_.ApplyApps({"demo"}, {});
  ASSERT_EQ(demo_.size(), 5u);
  EXPECT_EQ(Addresses(demo_[3]), (std::vector<std::string>{"m:1", "m:2"}));
  EXPECT_EQ(Addresses(demo_[4]), (std::vector<std::string>{"h:1", "h:3"}));
}

TEST_F(ExecutorViewTest, ResetEmitsOnlyDifferences) {
  view_.Reset({Exec("demo", "h:1"), Exec("demo", "h:2")}, {});
  SubscribeBoth();
  view_.Reset({Exec("demo", "h:2"), Exec("demo", "h:3")}, {});
  ASSERT_EQ(demo_.size(), 3u);
  EXPECT_EQ(Addresses(demo_[1]), std::vector<std::string>{"h:1"});
  EXPECT_EQ(demo_[1].type(), v1::WATCH_EVENT_TYPE_REMOVE);
  EXPECT_EQ(Addresses(demo_[2]), std::vector<std::string>{"h:3"});
}

TEST_F(ExecutorViewTest, UnsubscribeStopsEvents) {
  std::vector<v1::WatchExecutorsResponse> got;
  const int64_t id =
      view_.Subscribe("", [&](const v1::WatchExecutorsResponse& e) { got.push_back(e); });
  view_.Unsubscribe(id);
  view_.ApplyExecutors({{"demo", "h:1"}}, {Exec("demo", "h:1")});
  EXPECT_EQ(got.size(), 1u);
  EXPECT_GT(view_.version(), 100);
}

}  // namespace
}  // namespace jobwheel::registry
