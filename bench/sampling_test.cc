#include "bench/sampling.h"

#include <unistd.h>

#include "gtest/gtest.h"

namespace jobwheel::bench {
namespace {

TEST(ProcStatTest, ParsesACommandNameWithSpacesAndParentheses) {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
  auto s = ParseProcStat("42 (a b) c)) S 7 42 42 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 1 0");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ppid, 7);
  EXPECT_EQ(s->utime_ticks, 250);
  EXPECT_EQ(s->stime_ticks, 30);
  EXPECT_FALSE(ParseProcStat("42 (x").ok());
  EXPECT_FALSE(ParseProcStat("42 (x) S 1 2").ok());
}

TEST(ProcTest, ReadsItsOwnProcess) {
  auto s = ReadProc(getpid());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->rss_kb, 0);
  EXPECT_GE(s->peak_rss_kb, s->rss_kb);
  EXPECT_GE(s->cpu_seconds, 0);
}

TEST(ProcTest, FindsItselfAmongItsParentsChildren) {
  std::vector<pid_t> children = ChildrenOf(getppid());
  EXPECT_NE(std::find(children.begin(), children.end(), getpid()), children.end());
}

TEST(UsageTest, CpuIsTheDifferenceAndPostgresRssIsASum) {
  Samples before, after;
  before["postgres"][1] = {1.0, 100, 100};
  after["postgres"][1] = {3.0, 100, 100};
  after["postgres"][2] = {0.5, 50, 60};  // Started during the window.
  before["dispatcher"][3] = {2.0, 10, 20};
  after["dispatcher"][3] = {2.5, 10, 40};
  std::vector<ComponentUsage> u = Usage(before, after);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].name, "dispatcher");
  EXPECT_DOUBLE_EQ(u[0].cpu_seconds, 0.5);
  EXPECT_EQ(u[0].rss_kb, 40);
  EXPECT_EQ(u[1].name, "postgres");
  EXPECT_DOUBLE_EQ(u[1].cpu_seconds, 2.5);
  EXPECT_EQ(u[1].rss_kb, 150);
  EXPECT_TRUE(u[1].rss_is_sum);
}

}  // namespace
}  // namespace jobwheel::bench
