#include "services/scheduler/schedule.h"

#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"

namespace jobwheel::scheduler {

namespace {
// One year of seconds: long enough for any sensible rate, short enough to catch typos.
constexpr int64_t kMaxIntervalSeconds = 366LL * 24 * 3600;
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
    case jobwheel::v1::Schedule::kNone:
      return Schedule(Kind::kNone, std::nullopt, absl::InfinitePast(), absl::ZeroDuration());
    case jobwheel::v1::Schedule::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field_prefix, ": must be one of cron, fix_rate or none"));
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
    case Kind::kNone:
      return std::nullopt;
  }
  return std::nullopt;
}

std::vector<absl::Time> Schedule::Preview(absl::Time after, int n) const {
  std::vector<absl::Time> out;
  absl::Time t = after;
  for (int i = 0; i < n; ++i) {
    auto next = NextAfter(t);
    if (!next) break;
    out.push_back(*next);
    t = *next;
  }
  return out;
}

jobwheel::v1::TriggerType Schedule::trigger_type() const {
  switch (kind_) {
    case Kind::kCron:
      return jobwheel::v1::TRIGGER_TYPE_CRON;
    case Kind::kFixRate:
      return jobwheel::v1::TRIGGER_TYPE_FIX_RATE;
    case Kind::kNone:
      break;
  }
  return jobwheel::v1::TRIGGER_TYPE_UNSPECIFIED;
}

}  // namespace jobwheel::scheduler
