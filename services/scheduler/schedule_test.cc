#include "services/scheduler/schedule.h"

#include "common/time/clock.h"
#include "gtest/gtest.h"

namespace jobwheel::scheduler {
namespace {

absl::Time T(const char* s) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, s, &t, &err)) << err;
  return t;
}

TEST(ScheduleTest, FixRateCountsFromStart) {
  jobwheel::v1::Schedule p;
  p.mutable_fix_rate()->set_interval_seconds(10);
  p.mutable_fix_rate()->mutable_start_time()->set_seconds(
      absl::ToUnixSeconds(T("2026-01-01T00:00:00Z")));
  auto s = Schedule::FromProto(p, absl::UnixEpoch());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s->NextAfter(T("2025-12-31T00:00:00Z")), T("2026-01-01T00:00:00Z"));
  EXPECT_EQ(*s->NextAfter(T("2026-01-01T00:00:00Z")), T("2026-01-01T00:00:10Z"));
  EXPECT_EQ(*s->NextAfter(T("2026-01-01T00:00:15Z")), T("2026-01-01T00:00:20Z"));
  EXPECT_EQ(s->trigger_type(), jobwheel::v1::TRIGGER_TYPE_FIX_RATE);
}

TEST(ScheduleTest, CronPreview) {
  jobwheel::v1::Schedule p;
  p.mutable_cron()->set_expression("0 0/5 14,18 * * ?");
  auto s = Schedule::FromProto(p, absl::UnixEpoch());
  ASSERT_TRUE(s.ok()) << s.status();
  auto times = s->Preview(T("2026-03-02T13:00:00Z"), 3);
  ASSERT_EQ(times.size(), 3u);
  EXPECT_EQ(times[0], T("2026-03-02T14:00:00Z"));
  EXPECT_EQ(times[1], T("2026-03-02T14:05:00Z"));
  EXPECT_EQ(times[2], T("2026-03-02T14:10:00Z"));
}

TEST(ScheduleTest, NoneNeverFires) {
  jobwheel::v1::Schedule p;
  p.mutable_none();
  auto s = Schedule::FromProto(p, absl::UnixEpoch());
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->NextAfter(RealClock::Get().Now()).has_value());
  EXPECT_FALSE(s->fires_on_its_own());
}

// Valid for Quartz, but no fire time: an empty preview, not an error.
TEST(ScheduleTest, CronThatNeverFiresPreviewsNothing) {
  for (const char* expression : {"0 0 0 30 2 ?", "0 0 0 1 1 ? 2020", "0 0 L * * ?"}) {
    SCOPED_TRACE(expression);
    jobwheel::v1::Schedule p;
    p.mutable_cron()->set_expression(expression);
    auto s = Schedule::FromProto(p, absl::UnixEpoch());
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(s->Preview(T("2026-03-02T13:00:00Z"), 10).empty());
    EXPECT_FALSE(s->NextAfter(T("2026-03-02T13:00:00Z")).has_value());
  }
}

TEST(ScheduleTest, ErrorsNameTheField) {
  jobwheel::v1::Schedule empty;
  auto s = Schedule::FromProto(empty, absl::UnixEpoch(), "job.schedule");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("job.schedule"), std::string::npos);

  jobwheel::v1::Schedule rate;
  rate.mutable_fix_rate()->set_interval_seconds(0);
  s = Schedule::FromProto(rate, absl::UnixEpoch(), "job.schedule");
  EXPECT_NE(s.status().message().find("job.schedule.fix_rate.interval_seconds"), std::string::npos);

  jobwheel::v1::Schedule cron;
  cron.mutable_cron()->set_expression("0 0 25 * * ?");
  s = Schedule::FromProto(cron, absl::UnixEpoch(), "job.schedule");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("job.schedule.cron"), std::string::npos);
  EXPECT_NE(s.status().message().find("hour"), std::string::npos);
}

TEST(ScheduleTest, FixDelayFiresFirstAtItsStartAndHasNoTimesOfItsOwn) {
  jobwheel::v1::Schedule p;
  p.mutable_fix_delay()->mutable_delay()->set_nanos(300000000);
  auto s = Schedule::FromProto(p, absl::UnixEpoch(), "job.schedule");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->fixed_delay());
  EXPECT_EQ(s->delay(), absl::Milliseconds(300));
  EXPECT_EQ(s->trigger_type(), jobwheel::v1::TRIGGER_TYPE_FIX_RATE);
  // No start time: the first fire is at once.
  EXPECT_EQ(*s->NextAfter(T("2026-01-01T00:00:00Z")), T("2026-01-01T00:00:00Z"));
  EXPECT_TRUE(s->Preview(T("2026-01-01T00:00:00Z"), 10).empty());
  EXPECT_EQ(s->Describe(), "delay 300ms after each run ends");

  p.mutable_fix_delay()->mutable_start_time()->set_seconds(
      absl::ToUnixSeconds(T("2026-02-01T00:00:00Z")));
  s = Schedule::FromProto(p, absl::UnixEpoch());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s->NextAfter(T("2026-01-01T00:00:00Z")), T("2026-02-01T00:00:00Z"));
  EXPECT_EQ(*s->NextAfter(T("2026-03-01T00:00:00Z")), T("2026-03-01T00:00:00Z"));
}

TEST(ScheduleTest, FixDelayUnder100MsOrUnsetNamesTheField) {
  for (int64_t nanos : {int64_t{0}, int64_t{99000000}, int64_t{-1}}) {
    jobwheel::v1::Schedule p;
    if (nanos >= 0)
      p.mutable_fix_delay()->mutable_delay()->set_nanos(static_cast<int32_t>(nanos));
    else
      p.mutable_fix_delay();
    auto s = Schedule::FromProto(p, absl::UnixEpoch(), "job.schedule");
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << nanos;
    EXPECT_NE(s.status().message().find("job.schedule.fix_delay.delay"), std::string::npos)
        << s.status();
  }
  jobwheel::v1::Schedule ok;
  ok.mutable_fix_delay()->mutable_delay()->set_nanos(100000000);
  EXPECT_TRUE(Schedule::FromProto(ok, absl::UnixEpoch()).ok());
}

}  // namespace
}  // namespace jobwheel::scheduler
