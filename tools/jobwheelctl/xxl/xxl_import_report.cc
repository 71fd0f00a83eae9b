#include "tools/jobwheelctl/xxl/xxl_import_report.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

namespace jobwheel::ctl::xxl {
namespace {

const char* ActionName(ImportAction a) {
  switch (a) {
    case ImportAction::kCreate:
      return "create";
    case ImportAction::kExists:
      return "exists";
    case ImportAction::kSkip:
      return "skip";
  }
  return "?";
}

std::string ScheduleToken(const v1::Schedule& s) {
  if (s.has_cron()) {
    return absl::StrCat("cron:", s.cron().expression(), " (",
                        s.cron().time_zone().empty() ? "UTC" : s.cron().time_zone(), ")");
  }
  if (s.has_fix_rate()) return absl::StrCat("fix_rate:", s.fix_rate().interval_seconds(), "s");
  if (s.has_fix_delay()) return absl::StrCat("fix_delay:", s.fix_delay().delay().seconds(), "s");
  return "none";
}

// An enum value's name without its type prefix: ROUTING_STRATEGY_ROUND -> ROUND.
std::string Short(const std::string& name, absl::string_view prefix) {
  return std::string(absl::StripPrefix(name, prefix));
}

}  // namespace

std::string Token(absl::string_view value) {
  bool plain = !value.empty();
  for (char c : value) {
    const unsigned char u = c;
    if (u <= 0x20 || u == 0x7F || c == '"' || c == '\\' || c == '=') plain = false;
  }
  if (plain) return std::string(value);
  return absl::StrCat("\"", absl::CEscape(value), "\"");
}

std::string PlanLine(const PlannedJob& p) {
  const MappedJob& m = p.mapped;
  const v1::Job& j = m.job;
  std::vector<std::string> kv = {absl::StrCat("xxl_job=", m.xxl_id),
                                 absl::StrCat("action=", ActionName(p.action))};
  if (p.action == ImportAction::kExists) kv.push_back(absl::StrCat("job=", p.existing.id()));
  kv.push_back("app=" + Token(j.app()));
  kv.push_back("name=" + Token(j.name()));
  if (p.action != ImportAction::kSkip) {
    kv.push_back("schedule=" + Token(ScheduleToken(j.schedule())));
    kv.push_back("misfire=" +
                 Short(v1::MisfireStrategy_Name(j.misfire_strategy()), "MISFIRE_STRATEGY_"));
    kv.push_back("routing=" +
                 Short(v1::RoutingStrategy_Name(j.routing_strategy()), "ROUTING_STRATEGY_"));
    kv.push_back("block=" + Short(v1::BlockStrategy_Name(j.block_strategy()), "BLOCK_STRATEGY_"));
    kv.push_back("glue=" + Short(v1::GlueType_Name(j.glue_type()), "GLUE_TYPE_"));
    kv.push_back("handler=" + Token(j.handler()));
    kv.push_back("param=" + Token(j.param()));
    if (!j.script_source().empty()) kv.push_back(absl::StrCat("script=", j.script_source().size()));
    kv.push_back(absl::StrCat("timeout=", j.timeout().seconds(), "s"));
    kv.push_back(absl::StrCat("retries=", j.fail_retry_count()));
    kv.push_back(absl::StrCat("enabled=", j.enabled() ? "true" : "false"));
    if (j.alarm_contacts_size() > 0) {
      kv.push_back("alarm=" + Token(absl::StrJoin(j.alarm_contacts(), ",")));
    }
    if (!j.owner().empty()) kv.push_back("owner=" + Token(j.owner()));
    kv.push_back("children=" + (m.xxl_children.empty() ? "-" : absl::StrJoin(m.xxl_children, ",")));
    if (p.next_fire.has_value()) {
      kv.push_back("next=" +
                   Token(absl::FormatTime("%Y-%m-%d %H:%M:%S", *p.next_fire, absl::UTCTimeZone())));
    }
  }
  return absl::StrJoin(kv, " ");
}

std::vector<std::string> PlanDetails(const PlannedJob& p) {
  std::vector<std::string> lines;
  if (!p.mapped.skip.empty()) lines.push_back("  cannot map: " + p.mapped.skip);
  for (const std::string& n : p.mapped.notes) lines.push_back("  note: " + n);
  if (!p.differs.empty()) {
    lines.push_back(absl::StrCat("  differs: ", absl::StrJoin(p.differs, ", "), " (job ",
                                 p.existing.id(), " is left as it is)"));
  }
  return lines;
}

}  // namespace jobwheel::ctl::xxl
