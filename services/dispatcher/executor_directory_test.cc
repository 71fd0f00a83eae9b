#include "services/dispatcher/executor_directory.h"

#include "gtest/gtest.h"

namespace jobwheel::dispatcher {
namespace {

v1::Executor Exec(const std::string& app, const std::string& address) {
  v1::Executor e;
  e.set_app(app);
  e.set_address(address);
  e.add_handlers("echo");
  return e;
}

v1::WatchExecutorsResponse Event(int64_t version, v1::WatchEventType type,
                                 std::vector<v1::Executor> executors) {
  v1::WatchExecutorsResponse r;
  r.set_version(version);
  r.set_type(type);
  for (auto& e : executors) *r.add_executors() = e;
  return r;
}

std::vector<std::string> AddressesOf(const ExecutorDirectory& d, const std::string& app) {
  std::vector<std::string> out;
  for (const auto& e : d.Executors(app)) out.push_back(e.address());
  return out;
}

TEST(ExecutorDirectoryTest, SnapshotThenDeltasSortedByAddress) {
  size_t observed = 0;
  ExecutorDirectory d([&](size_t n) { observed = n; });
  EXPECT_FALSE(d.ready());
  // A delta before any snapshot is meaningless.
  EXPECT_FALSE(d.Apply(Event(1, v1::WATCH_EVENT_TYPE_UPSERT, {Exec("demo", "h:3")})));
  EXPECT_TRUE(d.Apply(Event(5, v1::WATCH_EVENT_TYPE_SNAPSHOT,
                            {Exec("demo", "h:3"), Exec("demo", "h:1"), Exec("other", "o:1")})));
  EXPECT_TRUE(d.ready());
  EXPECT_EQ(AddressesOf(d, "demo"), (std::vector<std::string>{"h:1", "h:3"}));
  EXPECT_EQ(observed, 3u);
  EXPECT_TRUE(d.Apply(Event(6, v1::WATCH_EVENT_TYPE_UPSERT, {Exec("demo", "h:2")})));
  EXPECT_EQ(AddressesOf(d, "demo"), (std::vector<std::string>{"h:1", "h:2", "h:3"}));
  EXPECT_TRUE(d.Apply(Event(7, v1::WATCH_EVENT_TYPE_REMOVE, {Exec("demo", "h:1")})));
  EXPECT_EQ(AddressesOf(d, "demo"), (std::vector<std::string>{"h:2", "h:3"}));
  EXPECT_EQ(d.size(), 3u);
  EXPECT_TRUE(AddressesOf(d, "nope").empty());
}

TEST(ExecutorDirectoryTest, StaleDeltasIgnoredAndSnapshotResetsBaseline) {
  ExecutorDirectory d;
  d.Apply(Event(10, v1::WATCH_EVENT_TYPE_SNAPSHOT, {Exec("demo", "h:1")}));
  EXPECT_FALSE(d.Apply(Event(10, v1::WATCH_EVENT_TYPE_REMOVE, {Exec("demo", "h:1")})));
  EXPECT_FALSE(d.Apply(Event(9, v1::WATCH_EVENT_TYPE_UPSERT, {Exec("demo", "h:9")})));
  EXPECT_EQ(AddressesOf(d, "demo"), (std::vector<std::string>{"h:1"}));
  // A reconnect to another replica: its snapshot wins even with a lower version.
  EXPECT_TRUE(d.Apply(Event(3, v1::WATCH_EVENT_TYPE_SNAPSHOT, {Exec("demo", "h:5")})));
  EXPECT_EQ(AddressesOf(d, "demo"), (std::vector<std::string>{"h:5"}));
  EXPECT_TRUE(d.Apply(Event(4, v1::WATCH_EVENT_TYPE_UPSERT, {Exec("demo", "h:6")})));
  EXPECT_EQ(AddressesOf(d, "demo"), (std::vector<std::string>{"h:5", "h:6"}));
}

TEST(ExecutorDirectoryTest, UpsertReplacesExecutorDetails) {
  ExecutorDirectory d;
  d.Apply(Event(1, v1::WATCH_EVENT_TYPE_SNAPSHOT, {Exec("demo", "h:1")}));
  v1::Executor changed = Exec("demo", "h:1");
  changed.add_handlers("sleep");
  d.Apply(Event(2, v1::WATCH_EVENT_TYPE_UPSERT, {changed}));
  ASSERT_EQ(d.Executors("demo").size(), 1u);
  EXPECT_EQ(d.Executors("demo")[0].handlers_size(), 2);
}

}  // namespace
}  // namespace jobwheel::dispatcher
