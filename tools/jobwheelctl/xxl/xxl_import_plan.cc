#include "tools/jobwheelctl/xxl/xxl_import_plan.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace jobwheel::ctl::xxl {
namespace {

std::string ScheduleText(const v1::Schedule& s) {
  if (s.has_cron()) {
    return absl::StrCat("cron ", s.cron().expression(), " ",
                        s.cron().time_zone().empty() ? "UTC" : s.cron().time_zone());
  }
  if (s.has_fix_rate()) return absl::StrCat("every ", s.fix_rate().interval_seconds(), "s");
  if (s.has_fix_delay()) {
    return absl::StrCat("delay ", s.fix_delay().delay().seconds(), "s ",
                        s.fix_delay().delay().nanos());
  }
  return "none";
}

}  // namespace

std::vector<std::string> DifferingFields(const v1::Job& want, const v1::Job& have) {
  std::vector<std::string> d;
  auto check = [&d](bool same, const char* field) {
    if (!same) d.emplace_back(field);
  };
  check(ScheduleText(want.schedule()) == ScheduleText(have.schedule()), "schedule");
  check(want.description() == have.description(), "description");
  check(want.owner() == have.owner(), "owner");
  check(std::equal(want.alarm_contacts().begin(), want.alarm_contacts().end(),
                   have.alarm_contacts().begin(), have.alarm_contacts().end()),
        "alarm_contacts");
  check(want.misfire_strategy() == have.misfire_strategy(), "misfire_strategy");
  check(want.routing_strategy() == have.routing_strategy(), "routing_strategy");
  check(want.block_strategy() == have.block_strategy(), "block_strategy");
  check(want.glue_type() == have.glue_type(), "glue_type");
  check(want.handler() == have.handler(), "handler");
  check(want.param() == have.param(), "param");
  check(want.script_source() == have.script_source(), "script_source");
  check(want.timeout().seconds() == have.timeout().seconds() &&
            want.timeout().nanos() == have.timeout().nanos(),
        "timeout");
  check(want.fail_retry_count() == have.fail_retry_count(), "fail_retry_count");
  check(want.enabled() == have.enabled(), "enabled");
  return d;
}

std::vector<PlannedJob> PlanImport(std::vector<MappedJob> mapped,
                                   const std::vector<v1::Job>& existing) {
  // (app, XXL id) -> the jobwheel job with the lowest id.
  std::map<std::pair<std::string, int64_t>, const v1::Job*> imported;
  for (const v1::Job& j : existing) {
    std::optional<int64_t> xxl_id = ImportedXxlId(j);
    if (!xxl_id.has_value()) continue;
    const v1::Job*& slot = imported[{j.app(), *xxl_id}];
    if (slot == nullptr || j.id() < slot->id()) slot = &j;
  }
  std::vector<PlannedJob> plan;
  plan.reserve(mapped.size());
  for (MappedJob& m : mapped) {
    PlannedJob p;
    auto it = imported.find({m.job.app(), m.xxl_id});
    if (!m.skip.empty()) {
      p.action = ImportAction::kSkip;
    } else if (it != imported.end()) {
      p.action = ImportAction::kExists;
      p.existing = *it->second;
      p.differs = DifferingFields(m.job, p.existing);
    }
    p.mapped = std::move(m);
    plan.push_back(std::move(p));
  }
  return plan;
}

ChildLinks ResolveChildren(const PlannedJob& job, const std::map<int64_t, int64_t>& jobwheel_ids,
                           const std::map<int64_t, std::string>& skipped) {
  ChildLinks links;
  for (int64_t child : job.mapped.xxl_children) {
    auto it = jobwheel_ids.find(child);
    if (it != jobwheel_ids.end()) {
      links.ids.push_back(it->second);
    } else if (skipped.count(child) > 0) {
      links.dropped.push_back(absl::StrCat("child xxl job ", child, " is not imported (",
                                           skipped.at(child), "): link dropped"));
    } else {
      links.dropped.push_back(absl::StrCat("child xxl job ", child,
                                           " is not in the export nor imported before: link "
                                           "dropped"));
    }
  }
  return links;
}

bool SameChildren(std::vector<int64_t> a, std::vector<int64_t> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace jobwheel::ctl::xxl
