#include "services/scheduler/fire_plan.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/time/proto_time.h"
#include "services/scheduler/schedule.h"

namespace jobwheel::scheduler {

using jobwheel::v1::Job;

absl::Time ClaimHorizon(absl::Time now, const ClaimWindow& window) {
  return now + window.preread_window;
}

DueWalk WalkDueTimes(const Schedule& schedule, absl::Time first, absl::Time before,
                     absl::Time mark) {
  DueWalk walk;
  walk.last = first;
  std::optional<absl::Time> t = first;
  while (t && *t < before && walk.count < kMaxMissedCounted) {
    walk.last = *t;
    ++walk.count;
    if (*t >= mark) ++walk.at_or_after_mark;
    t = schedule.NextAfter(*t);
  }
  walk.stopped_at = t;
  return walk;
}

std::string MisfireRange(int64_t count, absl::Time first, absl::Time last) {
  return absl::StrCat("misfire: ", count, " fire(s) from ", absl::FormatTime(first), " to ",
                      absl::FormatTime(last));
}

std::optional<int64_t> MisfireRangeCount(absl::string_view reason) {
  constexpr absl::string_view kPrefix = "misfire: ";
  if (!absl::ConsumePrefix(&reason, kPrefix)) return std::nullopt;
  int64_t n = 0;
  if (!absl::SimpleAtoi(reason.substr(0, reason.find(' ')), &n) || n < 1) return std::nullopt;
  return n;
}

std::optional<MisfireRangeParts> ParseMisfireRange(absl::string_view reason) {
  const std::optional<int64_t> count = MisfireRangeCount(reason);
  if (!count) return std::nullopt;
  // One token after " from " and one after " to ": FormatTime's RFC 3339 text has no spaces.
  auto token_after = [&reason](absl::string_view marker) -> std::optional<absl::string_view> {
    const size_t at = reason.find(marker);
    if (at == absl::string_view::npos) return std::nullopt;
    absl::string_view rest = reason.substr(at + marker.size());
    rest = rest.substr(0, rest.find_first_of(" ;,"));
    if (rest.empty()) return std::nullopt;
    reason.remove_prefix(at + marker.size());
    return rest;
  };
  const std::optional<absl::string_view> from = token_after(" fire(s) from ");
  if (!from) return std::nullopt;
  const std::optional<absl::string_view> to = token_after(" to ");
  if (!to) return std::nullopt;
  MisfireRangeParts parts;
  parts.count = *count;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, std::string(*from), &parts.first, &err) ||
      !absl::ParseTime(absl::RFC3339_full, std::string(*to), &parts.last, &err) ||
      parts.first > parts.last) {
    return std::nullopt;
  }
  return parts;
}

ClaimPlan PlanClaim(const std::vector<Job>& jobs, absl::Time now, const ClaimWindow& window,
                    const absl::flat_hash_map<int64_t, absl::Time>& fired_once_through) {
  ClaimPlan plan;
  const absl::Time fill_until = ClaimHorizon(now, window) + window.claim_ahead;
  const absl::Time threshold_before = now - window.misfire_threshold;
  plan.next.reserve(jobs.size());
  int64_t pending = 0;
  for (const Job& job : jobs) {
    // Past the budget, a job already behind is shed for a span (one row, then it waits its
    // turn again); one not yet due is left as it is.
    const bool over_budget = pending >= window.max_pending_fires && !plan.next.empty();
    const bool behind = job.has_next_fire_time() && FromProto(job.next_fire_time()) < now &&
                        !job.schedule().has_fix_delay();
    if (over_budget && !(window.shed_past_due && behind)) {
      ++plan.held_back;
      continue;
    }
    const absl::Time misfire_before = over_budget            ? now + window.shed_span
                                      : window.shed_past_due ? now
                                                             : threshold_before;
    auto schedule = Schedule::FromProto(job.schedule(), FromProto(job.create_time()));
    if (!schedule.ok()) {
      plan.invalid.emplace_back(job.id(), schedule.status());
      plan.next.push_back({job.id(), std::nullopt});
      continue;
    }
    const jobwheel::v1::TriggerType type = schedule->trigger_type();
    if (schedule->fixed_delay()) {
      PlannedFire f;
      f.job_id = job.id();
      f.scheduled = std::max(FromProto(job.next_fire_time()), now);
      f.trigger_type = type;
      plan.delay_chains.push_back({job.id(), f.scheduled});
      ++pending;
      plan.fires.push_back(std::move(f));
      plan.next.push_back({job.id(), std::nullopt});
      continue;
    }
    std::optional<absl::Time> t = FromProto(job.next_fire_time());
    // Misfire: the due times older than the threshold.
    if (t && *t < misfire_before) {
      const absl::Time first = *t;
      const DueWalk walk = WalkDueTimes(*schedule, first, misfire_before, threshold_before);
      const absl::Time last = walk.last;
      const int64_t missed = walk.count;
      t = walk.stopped_at;
      if (t && *t < misfire_before) {
        t = schedule->NextAfter(misfire_before - absl::Seconds(1));
      }
      const bool once_strategy =
          job.misfire_strategy() == jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW;
      // A fire-once of this term that covers the first missed time stands for this range too:
      // the takeover load fired once for the late fires an outage left, and the times missed
      // after them belong to the same outage.
      auto covered = fired_once_through.find(job.id());
      const bool already_once =
          once_strategy && covered != fired_once_through.end() && first <= covered->second;
      const bool once = once_strategy && !already_once;
      plan.misfires.push_back({job.misfire_strategy(), missed});
      // The times past but within the threshold: shed under load, else they would be late fires.
      const int64_t shed = window.shed_past_due || over_budget ? walk.at_or_after_mark : 0;
      plan.shed += shed;
      PlannedFire f;
      f.job_id = job.id();
      f.scheduled = first;
      f.trigger_type = once ? jobwheel::v1::TRIGGER_TYPE_MISFIRE : type;
      f.skipped = !once;
      f.reason =
          absl::StrCat(MisfireRange(missed, first, last),
                       once           ? " missed; fired once now (FIRE_ONCE_NOW)"
                       : already_once ? " missed; skipped, the job fired once (FIRE_ONCE_NOW)"
                                      : " skipped (DO_NOTHING)",
                       shed > 0 ? "; shed under load (the hand-off was at capacity)" : "");
      plan.fires.push_back(std::move(f));
    }
    while (t && *t <= fill_until && !over_budget) {
      PlannedFire f;
      f.job_id = job.id();
      f.scheduled = *t;
      f.trigger_type = type;
      plan.fires.push_back(std::move(f));
      t = schedule->NextAfter(*t);
      ++pending;
    }
    plan.next.push_back({job.id(), t});
  }
  return plan;
}

bool IsLateFire(jobwheel::v1::TriggerType type, absl::Time scheduled, absl::Time now,
                absl::Duration threshold) {
  const bool by_schedule =
      type == jobwheel::v1::TRIGGER_TYPE_CRON || type == jobwheel::v1::TRIGGER_TYPE_FIX_RATE;
  return by_schedule && scheduled < now - threshold;
}

LatePlan PlanLateFires(const std::vector<jobwheel::v1::Fire>& fires, absl::Time now,
                       absl::Duration threshold,
                       const absl::flat_hash_map<int64_t, absl::Time>& fired_once_through) {
  struct JobLate {
    jobwheel::v1::MisfireStrategy strategy = jobwheel::v1::MISFIRE_STRATEGY_UNSPECIFIED;
    bool has_misfire_fire = false;
    std::vector<const jobwheel::v1::Fire*> late;
  };
  // By job id, so the plan is the same whatever the order of `fires`.
  std::map<int64_t, JobLate> jobs;
  for (const jobwheel::v1::Fire& f : fires) {
    const int64_t job = f.job().id();
    if (f.trigger_type() == jobwheel::v1::TRIGGER_TYPE_MISFIRE) {
      jobs[job].has_misfire_fire = true;
      continue;
    }
    if (!IsLateFire(f.trigger_type(), FromProto(f.scheduled_time()), now, threshold)) continue;
    JobLate& j = jobs[job];
    j.strategy = f.job().misfire_strategy();
    j.late.push_back(&f);
  }
  LatePlan plan;
  for (auto& [job_id, j] : jobs) {
    if (j.late.empty()) continue;
    std::sort(j.late.begin(), j.late.end(), [](const auto* a, const auto* b) {
      const absl::Time ta = FromProto(a->scheduled_time()), tb = FromProto(b->scheduled_time());
      return ta < tb || (ta == tb && a->fire_id() < b->fire_id());
    });
    const absl::Time first = FromProto(j.late.front()->scheduled_time());
    const absl::Time last = FromProto(j.late.back()->scheduled_time());
    // "late:", not "misfire:": each row stands for its own scheduled time only (a claim-time
    // misfire row stands for a range), so readers of the reason never count a second twice.
    const std::string range =
        absl::StrCat(j.late.size(), " pending fire(s) from ", absl::FormatTime(first), " to ",
                     absl::FormatTime(last), " more than ", absl::FormatDuration(threshold),
                     " late (takeover or outage)");
    plan.misfires.push_back({j.strategy, static_cast<int64_t>(j.late.size())});
    const bool once = j.strategy == jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW;
    // The one fired once: the earliest late fire not covered by an earlier fire-once.
    const jobwheel::v1::Fire* fire_now = nullptr;
    if (once && !j.has_misfire_fire) {
      auto covered = fired_once_through.find(job_id);
      for (const jobwheel::v1::Fire* f : j.late) {
        if (covered == fired_once_through.end() ||
            FromProto(f->scheduled_time()) > covered->second) {
          fire_now = f;
          break;
        }
      }
    }
    if (fire_now != nullptr) {
      plan.fired_once.push_back(
          {fire_now->fire_id(), job_id,
           absl::StrCat("late: ", range, "; fired once now (FIRE_ONCE_NOW)")});
    }
    const std::string reason =
        once ? absl::StrCat("late: ", range, "; skipped, the job fired once (FIRE_ONCE_NOW)")
             : absl::StrCat("late: ", range, "; skipped (DO_NOTHING)");
    for (const jobwheel::v1::Fire* f : j.late) {
      if (f != fire_now) plan.skipped.push_back({f->fire_id(), job_id, reason});
    }
  }
  return plan;
}

absl::Time HandOffTime(absl::Time scheduled, absl::Duration lead, absl::Duration interval) {
  const absl::Time at = scheduled - lead;
  if (lead <= absl::ZeroDuration() || interval <= absl::ZeroDuration()) return at;
  return absl::UnixEpoch() + absl::Floor(at - absl::UnixEpoch(), interval);
}

absl::Duration HandOffLateness(jobwheel::v1::TriggerType type, absl::Time scheduled,
                               absl::Time sent, absl::Duration lead, absl::Duration interval) {
  const bool by_schedule =
      type == jobwheel::v1::TRIGGER_TYPE_CRON || type == jobwheel::v1::TRIGGER_TYPE_FIX_RATE;
  return sent - (by_schedule ? HandOffTime(scheduled, lead, interval) : scheduled);
}

absl::Duration HandOffBackoff(int failures) {
  const int n = std::clamp(failures, 1, kMaxHandOffFailures);
  return absl::Milliseconds(100) * (1 << (n - 1));
}

}  // namespace jobwheel::scheduler
