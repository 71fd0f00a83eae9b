// GetRunStats request resolution (defaults, validation naming the field) and response assembly.
#include "services/scheduler/admin/run_stats.h"

#include <string>
#include <vector>

#include "common/time/proto_time.h"
#include "gtest/gtest.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::v1::GetRunStatsRequest;

// 2026-11-26 12:34:56.789 UTC.
const absl::Time kNow = absl::FromUnixMillis(1795696496789);

absl::Time At(const char* rfc3339) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) << err;
  return t;
}

TEST(RunStatsTest, DefaultsAreTheLastDayInWholeHours) {
  auto q = ResolveRunStatsQuery(GetRunStatsRequest(), kNow);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->end, kNow);
  EXPECT_EQ(q->bucket, absl::Hours(1));
  EXPECT_EQ(q->start, At("2026-11-25T12:00:00Z"));
  EXPECT_EQ(RunStatsBucketCount(*q), 25);  // 24 whole hours and the current partial one.
  EXPECT_FALSE(q->only_apps.has_value());

  GetRunStatsRequest req;
  req.mutable_bucket()->set_seconds(15 * 60);
  q = ResolveRunStatsQuery(req, kNow);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->start, At("2026-11-25T12:30:00Z"));
  EXPECT_EQ(RunStatsBucketCount(*q), 97);
}

TEST(RunStatsTest, ExplicitWindowIsKept) {
  GetRunStatsRequest req;
  req.set_app("demo");
  req.set_job_id(7);
  *req.mutable_start_time() = ToProto(At("2026-11-20T00:00:00Z"));
  *req.mutable_end_time() = ToProto(At("2026-11-20T01:00:00Z"));
  req.mutable_bucket()->set_seconds(60);
  auto q = ResolveRunStatsQuery(req, kNow);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->app, "demo");
  EXPECT_EQ(q->job_id, 7);
  EXPECT_EQ(q->start, At("2026-11-20T00:00:00Z"));
  EXPECT_EQ(q->end, At("2026-11-20T01:00:00Z"));
  EXPECT_EQ(RunStatsBucketCount(*q), 60);
}

TEST(RunStatsTest, BadRequestsNameTheirField) {
  struct Case {
    std::string name;
    GetRunStatsRequest req;
    std::string field;
  };
  std::vector<Case> cases;
  auto add = [&](std::string name, std::string field, auto edit) {
    Case c{std::move(name), GetRunStatsRequest(), std::move(field)};
    edit(c.req);
    cases.push_back(std::move(c));
  };
  add("negative job", "job_id", [](GetRunStatsRequest& r) { r.set_job_id(-1); });
  add("long app", "app", [](GetRunStatsRequest& r) { r.set_app(std::string(65, 'a')); });
  add("bucket 59s", "bucket", [](GetRunStatsRequest& r) { r.mutable_bucket()->set_seconds(59); });
  add("bucket 0", "bucket", [](GetRunStatsRequest& r) { r.mutable_bucket(); });
  add("bucket negative", "bucket",
      [](GetRunStatsRequest& r) { r.mutable_bucket()->set_seconds(-3600); });
  add("bucket fraction", "bucket", [](GetRunStatsRequest& r) {
    r.mutable_bucket()->set_seconds(60);
    r.mutable_bucket()->set_nanos(500);
  });
  add("bucket 25h", "bucket",
      [](GetRunStatsRequest& r) { r.mutable_bucket()->set_seconds(25 * 3600); });
  add("bad end", "end_time", [](GetRunStatsRequest& r) { r.mutable_end_time()->set_nanos(-1); });
  add("bad start", "start_time",
      [](GetRunStatsRequest& r) { r.mutable_start_time()->set_seconds(253402300800); });
  add("end before start", "end_time", [](GetRunStatsRequest& r) {
    *r.mutable_start_time() = ToProto(kNow);
    *r.mutable_end_time() = ToProto(kNow - absl::Hours(1));
  });
  add("end equals start", "end_time", [](GetRunStatsRequest& r) {
    *r.mutable_start_time() = ToProto(kNow);
    *r.mutable_end_time() = ToProto(kNow);
  });
  add("start in the future", "end_time",
      [](GetRunStatsRequest& r) { *r.mutable_start_time() = ToProto(kNow + absl::Minutes(1)); });
  add("32 days", "start_time", [](GetRunStatsRequest& r) {
    *r.mutable_start_time() = ToProto(kNow - absl::Hours(32 * 24));
    r.mutable_bucket()->set_seconds(24 * 3600);
  });
  add("1001 buckets", "bucket", [](GetRunStatsRequest& r) {
    *r.mutable_start_time() = ToProto(kNow - absl::Minutes(1001));
    r.mutable_bucket()->set_seconds(60);
  });
  for (const Case& c : cases) {
    auto q = ResolveRunStatsQuery(c.req, kNow);
    ASSERT_FALSE(q.ok()) << c.name;
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(q.status().message().rfind(c.field + ": ", 0), 0u)
        << c.name << ": " << q.status().message();
  }
  // The limits themselves pass: 1000 one-minute buckets, 31 days in daily buckets.
  GetRunStatsRequest ok;
  *ok.mutable_start_time() = ToProto(kNow - absl::Minutes(1000));
  ok.mutable_bucket()->set_seconds(60);
  EXPECT_TRUE(ResolveRunStatsQuery(ok, kNow).ok());
  *ok.mutable_start_time() = ToProto(kNow - absl::Hours(31 * 24));
  ok.mutable_bucket()->set_seconds(24 * 3600);
  EXPECT_TRUE(ResolveRunStatsQuery(ok, kNow).ok());
}

TEST(RunStatsTest, ResponseHasEveryBucketAndTotals) {
  RunStatsQuery q;
  q.start = At("2026-11-20T00:00:00Z");
  q.end = At("2026-11-20T02:30:00Z");
  q.bucket = absl::Hours(1);
  RunStatsRows rows;
  rows.counts = {{2, jobwheel::v1::RUN_STATUS_FAILED, 1},
                 {0, jobwheel::v1::RUN_STATUS_SUCCEEDED, 5},
                 {0, jobwheel::v1::RUN_STATUS_FAILED, 2},
                 {2, jobwheel::v1::RUN_STATUS_SUCCEEDED, 3}};
  rows.lateness[0] = {4, absl::Milliseconds(3), absl::Milliseconds(9), absl::Milliseconds(10)};
  rows.overall_lateness = {6, absl::Milliseconds(4), absl::Milliseconds(12),
                           absl::Milliseconds(20)};
  const jobwheel::v1::GetRunStatsResponse r = BuildRunStatsResponse(q, rows);
  EXPECT_EQ(FromProto(r.start_time()), q.start);
  EXPECT_EQ(FromProto(r.end_time()), q.end);
  EXPECT_EQ(r.bucket().seconds(), 3600);
  ASSERT_EQ(r.buckets_size(), 3);
  EXPECT_EQ(FromProto(r.buckets(1).start_time()), At("2026-11-20T01:00:00Z"));
  EXPECT_EQ(FromProto(r.buckets(2).start_time()), At("2026-11-20T02:00:00Z"));
  // Statuses in RunStatus order; empty buckets have none.
  ASSERT_EQ(r.buckets(0).status_counts_size(), 2);
  EXPECT_EQ(r.buckets(0).status_counts(0).status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(r.buckets(0).status_counts(0).count(), 5);
  EXPECT_EQ(r.buckets(0).status_counts(1).status(), jobwheel::v1::RUN_STATUS_FAILED);
  EXPECT_EQ(r.buckets(0).total(), 7);
  EXPECT_EQ(r.buckets(1).total(), 0);
  EXPECT_EQ(r.buckets(1).status_counts_size(), 0);
  EXPECT_EQ(r.buckets(1).lateness().sample_count(), 0);
  EXPECT_FALSE(r.buckets(1).lateness().has_p50());
  EXPECT_EQ(r.buckets(2).total(), 4);
  EXPECT_EQ(r.buckets(0).lateness().sample_count(), 4);
  EXPECT_EQ(FromProto(r.buckets(0).lateness().p99()), absl::Milliseconds(9));
  EXPECT_EQ(r.total(), 11);
  ASSERT_EQ(r.status_counts_size(), 2);
  EXPECT_EQ(r.status_counts(0).count(), 8);
  EXPECT_EQ(r.status_counts(1).count(), 3);
  EXPECT_EQ(r.lateness().sample_count(), 6);
  EXPECT_EQ(FromProto(r.lateness().max()), absl::Milliseconds(20));
}

TEST(RunStatsTest, LatenessInterpolatesLikePercentileCont) {
  std::vector<absl::Duration> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(absl::Milliseconds(i));
  LatenessStats l = SummarizeLateness(samples);
  EXPECT_EQ(l.samples, 100);
  // percentile_cont(0.5) of 1..100 = 50.5; (0.99) = 99.01.
  EXPECT_EQ(l.p50, absl::Microseconds(50500));
  EXPECT_EQ(l.p99, absl::Microseconds(99010));
  EXPECT_EQ(l.max, absl::Milliseconds(100));
  l = SummarizeLateness({absl::Milliseconds(7)});
  EXPECT_EQ(l.p50, absl::Milliseconds(7));
  EXPECT_EQ(l.p99, absl::Milliseconds(7));
  EXPECT_EQ(SummarizeLateness({}).samples, 0);
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
