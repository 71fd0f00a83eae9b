#include "services/scheduler/schedule.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"

namespace jobwheel::scheduler {

namespace {
// One year of seconds: long enough for any sensible rate, short enough to catch typos.
constexpr int64_t kMaxIntervalSeconds = 366LL * 24 * 3600;
constexpr absl::Duration kMinDelay = absl::Milliseconds(100);
}  // namespace

absl::StatusOr<Schedule> Schedule::FromProto(const jobwheel::v1::Schedule& proto,
                                             absl::Time created, absl::string_view field_prefix) {
  switch (proto.kind_case()) {
    case jobwheel::v1::Schedule::kCron: {
      auto cron = CronExpression::Parse(proto.cron().expression(), proto.cron().time_zone());
      if (!cron.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(field_prefix, ".cron: ", cron.status().message()));
      }
      return Schedule(Kind::kCron, *std::move(cron), absl::InfinitePast(), absl::ZeroDuration());
    }
    case jobwheel::v1::Schedule::kFixRate: {
      const int64_t secs = proto.fix_rate().interval_seconds();
      if (secs < 1 || secs > kMaxIntervalSeconds) {
        return absl::InvalidArgumentError(
            absl::StrCat(field_prefix, ".fix_rate.interval_seconds: must be between 1 and ",
                         kMaxIntervalSeconds, ", got ", secs));
      }
      absl::Time start = proto.fix_rate().has_start_time()
                             ? jobwheel::FromProto(proto.fix_rate().start_time())
                             : absl::FromUnixSeconds(absl::ToUnixSeconds(created));
      return Schedule(Kind::kFixRate, std::nullopt, start, absl::Seconds(secs));
    }
    case jobwheel::v1::Schedule::kFixDelay: {
      const jobwheel::v1::FixDelaySchedule& d = proto.fix_delay();
      const absl::Duration delay =
          absl::Trunc(jobwheel::FromProto(d.delay()), absl::Milliseconds(1));
      if (!d.has_delay() || delay < kMinDelay || delay > absl::Seconds(kMaxIntervalSeconds)) {
        return absl::InvalidArgumentError(absl::StrCat(
            field_prefix, ".fix_delay.delay: must be between 100ms and ", kMaxIntervalSeconds,
            "s, got ",
            d.has_delay() ? absl::FormatDuration(jobwheel::FromProto(d.delay())) : "none"));
      }
      absl::Time start =
          d.has_start_time() ? jobwheel::FromProto(d.start_time()) : absl::InfinitePast();
      return Schedule(Kind::kFixDelay, std::nullopt, start, delay);
    }
    case jobwheel::v1::Schedule::kNone:
      return Schedule(Kind::kNone, std::nullopt, absl::InfinitePast(), absl::ZeroDuration());
    case jobwheel::v1::Schedule::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field_prefix, ": must be one of cron, fix_rate, fix_delay or none"));
}

std::optional<absl::Time> Schedule::NextAfter(absl::Time after) const {
  switch (kind_) {
    case Kind::kCron:
      return cron_->NextAfter(after);
    case Kind::kFixRate: {
      if (after < start_) return start_;
      absl::Duration rem;
      const int64_t n = absl::IDivDuration(after - start_, interval_, &rem) + 1;
      return start_ + n * interval_;
    }
    case Kind::kFixDelay:
      return std::max(start_, after);
    case Kind::kNone:
      return std::nullopt;
  }
  return std::nullopt;
}

std::vector<absl::Time> Schedule::Preview(absl::Time after, int n) const {
  std::vector<absl::Time> out;
  if (kind_ == Kind::kFixDelay) return out;  // Times depend on when runs end.
  absl::Time t = after;
  for (int i = 0; i < n; ++i) {
    auto next = NextAfter(t);
    if (!next) break;
    out.push_back(*next);
    t = *next;
  }
  return out;
}

std::string Schedule::Describe() const {
  if (kind_ != Kind::kFixDelay) return "";
  return absl::StrCat("delay ", absl::FormatDuration(interval_), " after each run ends");
}

jobwheel::v1::TriggerType Schedule::trigger_type() const {
  switch (kind_) {
    case Kind::kCron:
      return jobwheel::v1::TRIGGER_TYPE_CRON;
    case Kind::kFixRate:
    case Kind::kFixDelay:
      return jobwheel::v1::TRIGGER_TYPE_FIX_RATE;
    case Kind::kNone:
      break;
  }
  return jobwheel::v1::TRIGGER_TYPE_UNSPECIFIED;
}

}  // namespace jobwheel::scheduler
