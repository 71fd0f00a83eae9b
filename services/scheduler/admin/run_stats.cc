#include "services/scheduler/admin/run_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"
#include "services/scheduler/admin/job_validation.h"

namespace jobwheel::scheduler::admin {
namespace {

// Timestamp and Duration bounds from google/protobuf/{timestamp,duration}.proto.
constexpr int64_t kMinTimestampSeconds = -62135596800;  // 0001-01-01T00:00:00Z
constexpr int64_t kMaxTimestampSeconds = 253402300799;  // 9999-12-31T23:59:59Z
constexpr int64_t kMaxDurationSeconds = 315576000000;

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

absl::Status CheckTimestamp(const google::protobuf::Timestamp& ts, absl::string_view field) {
  if (ts.seconds() < kMinTimestampSeconds || ts.seconds() > kMaxTimestampSeconds ||
      ts.nanos() < 0 || ts.nanos() > 999999999) {
    return Invalid(field, "not a valid timestamp");
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Duration> ResolveBucket(const jobwheel::v1::GetRunStatsRequest& req) {
  if (!req.has_bucket()) return kDefaultRunStatsBucket;
  const google::protobuf::Duration& d = req.bucket();
  if (d.seconds() < -kMaxDurationSeconds || d.seconds() > kMaxDurationSeconds ||
      d.nanos() < -999999999 || d.nanos() > 999999999) {
    return Invalid("bucket", "not a valid duration");
  }
  if (d.nanos() != 0) return Invalid("bucket", "must be whole seconds");
  const absl::Duration bucket = absl::Seconds(d.seconds());
  if (bucket < kMinRunStatsBucket) {
    return Invalid("bucket",
                   absl::StrCat("must be at least 1m, got ", absl::FormatDuration(bucket)));
  }
  if (bucket > kMaxRunStatsBucket) {
    return Invalid("bucket",
                   absl::StrCat("must be at most 24h, got ", absl::FormatDuration(bucket)));
  }
  return bucket;
}

void AddLateness(const LatenessStats& in, jobwheel::v1::RunLateness* out) {
  out->set_sample_count(in.samples);
  if (in.samples == 0) return;
  *out->mutable_p50() = ToProtoDuration(in.p50);
  *out->mutable_p99() = ToProtoDuration(in.p99);
  *out->mutable_max() = ToProtoDuration(in.max);
}

// Percentile `q` of sorted `v` with linear interpolation between the closest ranks.
absl::Duration Interpolate(const std::vector<absl::Duration>& v, double q) {
  const double rank = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = static_cast<size_t>(std::ceil(rank));
  const double frac = rank - static_cast<double>(lo);
  return RoundToMicroseconds(v[lo] + (v[hi] - v[lo]) * frac);
}

}  // namespace

absl::StatusOr<RunStatsQuery> ResolveRunStatsQuery(const jobwheel::v1::GetRunStatsRequest& req,
                                                   absl::Time now) {
  if (req.job_id() < 0) {
    return Invalid("job_id", absl::StrCat("must not be negative, got ", req.job_id()));
  }
  if (req.app().size() > static_cast<size_t>(kMaxAppLength)) {
    return Invalid("app", absl::StrCat("must be at most ", kMaxAppLength, " characters"));
  }
  RunStatsQuery q;
  q.app = req.app();
  q.job_id = req.job_id();
  absl::StatusOr<absl::Duration> bucket = ResolveBucket(req);
  if (!bucket.ok()) return bucket.status();
  q.bucket = *bucket;
  if (req.has_end_time()) {
    absl::Status s = CheckTimestamp(req.end_time(), "end_time");
    if (!s.ok()) return s;
  }
  if (req.has_start_time()) {
    absl::Status s = CheckTimestamp(req.start_time(), "start_time");
    if (!s.ok()) return s;
  }
  q.end = req.has_end_time() ? FromProto(req.end_time()) : now;
  if (req.has_start_time()) {
    q.start = FromProto(req.start_time());
  } else {
    // Whole buckets since the epoch, so the default chart's buckets fall on whole hours.
    const absl::Duration since_epoch = q.end - kDefaultRunStatsWindow - absl::UnixEpoch();
    q.start = absl::UnixEpoch() + absl::Floor(since_epoch, q.bucket);
  }
  if (q.end <= q.start) return Invalid("end_time", "must be after start_time");
  if (q.end - q.start > kMaxRunStatsWindow) {
    return Invalid("start_time",
                   absl::StrCat("the window to end_time must be at most 31 days, got ",
                                absl::FormatDuration(q.end - q.start)));
  }
  const int64_t buckets = RunStatsBucketCount(q);
  if (buckets > kMaxRunStatsBuckets) {
    return Invalid("bucket",
                   absl::StrCat("at most ", kMaxRunStatsBuckets, " buckets per window, got ",
                                buckets, " (widen the bucket or narrow the window)"));
  }
  return q;
}

int64_t RunStatsBucketCount(const RunStatsQuery& query) {
  absl::Duration rem;
  const int64_t whole = absl::IDivDuration(query.end - query.start, query.bucket, &rem);
  return rem > absl::ZeroDuration() ? whole + 1 : whole;
}

jobwheel::v1::GetRunStatsResponse BuildRunStatsResponse(const RunStatsQuery& query,
                                                        const RunStatsRows& rows) {
  const int64_t n = RunStatsBucketCount(query);
  // Bucket → status → runs; bucket -1 holds the window's totals.
  std::map<int64_t, std::map<int, int64_t>> counts;
  for (const RunStatsRows::Count& c : rows.counts) {
    if (c.bucket < 0 || c.bucket >= n || c.runs <= 0) continue;
    counts[c.bucket][c.status] += c.runs;
    counts[-1][c.status] += c.runs;
  }
  auto fill = [](const std::map<int, int64_t>& by_status,
                 google::protobuf::RepeatedPtrField<jobwheel::v1::RunStatusCount>* out) {
    int64_t total = 0;
    for (const auto& [status, runs] : by_status) {
      jobwheel::v1::RunStatusCount* c = out->Add();
      c->set_status(static_cast<jobwheel::v1::RunStatus>(status));
      c->set_count(runs);
      total += runs;
    }
    return total;
  };
  jobwheel::v1::GetRunStatsResponse resp;
  *resp.mutable_start_time() = ToProto(query.start);
  *resp.mutable_end_time() = ToProto(query.end);
  *resp.mutable_bucket() = ToProtoDuration(query.bucket);
  static const std::map<int, int64_t> kNone;
  for (int64_t i = 0; i < n; ++i) {
    jobwheel::v1::RunStatsBucket* b = resp.add_buckets();
    *b->mutable_start_time() = ToProto(query.start + query.bucket * i);
    auto it = counts.find(i);
    b->set_total(fill(it == counts.end() ? kNone : it->second, b->mutable_status_counts()));
    auto late = rows.lateness.find(i);
    AddLateness(late == rows.lateness.end() ? LatenessStats() : late->second,
                b->mutable_lateness());
  }
  auto all = counts.find(-1);
  resp.set_total(fill(all == counts.end() ? kNone : all->second, resp.mutable_status_counts()));
  AddLateness(rows.overall_lateness, resp.mutable_lateness());
  return resp;
}

LatenessStats SummarizeLateness(std::vector<absl::Duration> samples) {
  LatenessStats out;
  out.samples = static_cast<int64_t>(samples.size());
  if (samples.empty()) return out;
  std::sort(samples.begin(), samples.end());
  out.p50 = Interpolate(samples, 0.5);
  out.p99 = Interpolate(samples, 0.99);
  out.max = samples.back();
  return out;
}

absl::Duration RoundToMicroseconds(absl::Duration d) {
  return absl::Microseconds(std::llround(absl::ToDoubleMicroseconds(d)));
}

}  // namespace jobwheel::scheduler::admin
