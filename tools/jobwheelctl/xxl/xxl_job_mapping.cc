#include "tools/jobwheelctl/xxl/xxl_job_mapping.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace jobwheel::ctl::xxl {
namespace {

constexpr int kMaxNameChars = 128;                     // Job.name's limit.
constexpr int64_t kMaxTimeoutSeconds = 7 * 24 * 3600;  // Job.timeout's limit.
constexpr int64_t kMaxRetries = 100;                   // Job.fail_retry_count's limit.
constexpr int64_t kMaxDelaySeconds = 366 * 24 * 3600;  // FixDelaySchedule.delay's limit.

std::string Quote(absl::string_view s) { return absl::StrCat("\"", absl::CHexEscape(s), "\""); }

std::string Upper(absl::string_view s) {
  return absl::AsciiStrToUpper(absl::StripAsciiWhitespace(s));
}

// Sets the schedule; returns why it cannot be mapped (empty when it can).
std::string MapSchedule(const XxlJob& in, const MappingOptions& options, MappedJob& out) {
  std::string type = Upper(in.schedule_type);
  std::string conf(absl::StripAsciiWhitespace(in.schedule_conf));
  if (type.empty() && !absl::StripAsciiWhitespace(in.job_cron).empty()) {
    type = "CRON";  // Before XXL-JOB 2.3 every job had a cron and no schedule type.
    conf = std::string(absl::StripAsciiWhitespace(in.job_cron));
  }
  v1::Schedule& s = *out.job.mutable_schedule();
  if (type.empty() || type == "NONE") {
    s.mutable_none();
    return "";
  }
  if (type == "CRON") {
    if (conf.empty()) return "schedule_conf: empty for schedule_type CRON";
    s.mutable_cron()->set_expression(conf);
    s.mutable_cron()->set_time_zone(options.time_zone);
    if (options.time_zone.empty()) {
      out.notes.push_back(
          "cron evaluated in UTC; XXL-JOB used its admin's time zone (see --time_zone)");
    }
    return "";
  }
  if (type == "FIX_RATE") {
    int64_t seconds = 0;
    if (!absl::SimpleAtoi(conf, &seconds) || seconds <= 0) {
      return absl::StrCat("schedule_conf ", Quote(conf),
                          ": FIX_RATE needs a whole number of seconds above 0");
    }
    s.mutable_fix_rate()->set_interval_seconds(seconds);
    return "";
  }
  if (type == "FIX_DELAY") {
    int64_t seconds = 0;
    if (!absl::SimpleAtoi(conf, &seconds) || seconds <= 0 || seconds > kMaxDelaySeconds) {
      return absl::StrCat("schedule_conf ", Quote(conf),
                          ": FIX_DELAY needs a whole number of seconds from 1 to ",
                          kMaxDelaySeconds);
    }
    s.mutable_fix_delay()->mutable_delay()->set_seconds(seconds);
    return "";
  }
  return absl::StrCat("schedule_type ", Quote(in.schedule_type),
                      ": unknown (NONE, CRON, FIX_RATE or FIX_DELAY)");
}

std::string MapStrategies(const XxlJob& in, MappedJob& out) {
  const std::string misfire = Upper(in.misfire_strategy);
  if (misfire.empty() || misfire == "DO_NOTHING") {
    out.job.set_misfire_strategy(v1::MISFIRE_STRATEGY_DO_NOTHING);
  } else if (misfire == "FIRE_ONCE_NOW") {
    out.job.set_misfire_strategy(v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  } else {
    return absl::StrCat("misfire_strategy ", Quote(in.misfire_strategy),
                        ": unknown (DO_NOTHING or FIRE_ONCE_NOW)");
  }

  const std::string route = Upper(in.executor_route_strategy);
  v1::RoutingStrategy routing = v1::ROUTING_STRATEGY_FIRST;
  if (!route.empty() && (!v1::RoutingStrategy_Parse("ROUTING_STRATEGY_" + route, &routing) ||
                         routing == v1::ROUTING_STRATEGY_UNSPECIFIED)) {
    return absl::StrCat("executor_route_strategy ", Quote(in.executor_route_strategy), ": unknown");
  }
  out.job.set_routing_strategy(routing);

  const std::string block = Upper(in.executor_block_strategy);
  v1::BlockStrategy blocking = v1::BLOCK_STRATEGY_SERIAL_EXECUTION;
  if (!block.empty() && (!v1::BlockStrategy_Parse("BLOCK_STRATEGY_" + block, &blocking) ||
                         blocking == v1::BLOCK_STRATEGY_UNSPECIFIED)) {
    return absl::StrCat("executor_block_strategy ", Quote(in.executor_block_strategy),
                        ": unknown (SERIAL_EXECUTION, DISCARD_LATER or COVER_EARLY)");
  }
  out.job.set_block_strategy(blocking);
  return "";
}

// Whether an XXL-JOB script reads its param or shard as arguments ($1 $2 $3, sys.argv), which
// jobwheel's executors pass in the environment instead (argv is every local user's to read).
bool ReadsArguments(absl::string_view source) {
  for (absl::string_view arg : {"$1", "$2", "$3", "${1", "${2", "${3", "$@", "$*", "sys.argv"}) {
    if (absl::StrContains(source, arg)) return true;
  }
  return false;
}

// What runs: a handler (XXL's BEAN) or a shell or python script (GLUE_SHELL, GLUE_PYTHON).
std::string MapGlue(const XxlJob& in, MappedJob& out) {
  const std::string glue = Upper(in.glue_type);
  const std::string handler(absl::StripAsciiWhitespace(in.executor_handler));
  out.job.set_handler(handler);
  if (glue.empty() || glue == "BEAN") {
    if (handler.empty()) return "executor_handler: empty (a BEAN job names its handler)";
    out.job.set_glue_type(v1::GLUE_TYPE_HANDLER);
    return "";
  }
  if (glue == "GLUE_SHELL" || glue == "GLUE_PYTHON") {
    if (in.glue_source.empty()) return absl::StrCat("glue_source: empty for ", glue);
    out.job.set_glue_type(glue == "GLUE_SHELL" ? v1::GLUE_TYPE_SCRIPT_SHELL
                                               : v1::GLUE_TYPE_SCRIPT_PYTHON);
    out.job.set_script_source(in.glue_source);
    if (glue == "GLUE_PYTHON") {
      out.notes.push_back("GLUE_PYTHON runs as python3 (XXL-JOB up to 3.1 ran `python`)");
    }
    out.notes.push_back("a script job: its app's executors must allow scripts");
    if (ReadsArguments(in.glue_source)) {
      out.notes.push_back(
          "the script reads arguments ($1 $2 $3): jobwheel passes the param and shard as "
          "$JOBWHEEL_PARAM, $JOBWHEEL_SHARD_INDEX, $JOBWHEEL_SHARD_TOTAL (rewrite it, or run "
          "its executors with --script_params_in_argv)");
    }
    if (!absl::StripAsciiWhitespace(in.glue_remark).empty()) {
      out.notes.push_back("glue_remark not kept (jobwheel numbers script versions)");
    }
    return "";
  }
  if (glue == "GLUE_GROOVY" || glue == "GLUE_PYTHON2" || glue == "GLUE_PHP" ||
      glue == "GLUE_NODEJS" || glue == "GLUE_POWERSHELL") {
    return absl::StrCat("glue_type ", glue,
                        ": jobwheel runs handlers and shell or python3 scripts only; rewrite it "
                        "as a handler (BEAN) or a GLUE_SHELL/GLUE_PYTHON script");
  }
  return absl::StrCat("glue_type ", Quote(in.glue_type), ": unknown");
}

std::string MapLimits(const XxlJob& in, MappedJob& out) {
  if (in.executor_timeout < 0 || in.executor_timeout > kMaxTimeoutSeconds) {
    return absl::StrCat("executor_timeout ", in.executor_timeout, ": must be 0 to ",
                        kMaxTimeoutSeconds, " seconds");
  }
  if (in.executor_timeout > 0) out.job.mutable_timeout()->set_seconds(in.executor_timeout);
  if (in.executor_fail_retry_count < 0 || in.executor_fail_retry_count > kMaxRetries) {
    return absl::StrCat("executor_fail_retry_count ", in.executor_fail_retry_count,
                        ": must be 0 to ", kMaxRetries);
  }
  out.job.set_fail_retry_count(static_cast<int32_t>(in.executor_fail_retry_count));
  return "";
}

// Cuts `s` to at most `n` code points.
std::string CutUtf8(absl::string_view s, int n) {
  size_t i = 0;
  for (int chars = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && chars++ == n) break;
  }
  return std::string(s.substr(0, i));
}

}  // namespace

absl::StatusOr<std::map<int64_t, std::string>> ParseAppMap(absl::string_view text) {
  std::map<int64_t, std::string> map;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    int64_t group = 0;
    const std::string app =
        kv.size() == 2 ? std::string(absl::StripAsciiWhitespace(kv[1])) : std::string();
    if (kv.size() != 2 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(kv[0]), &group) ||
        group <= 0 || app.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--app_map: ", Quote(absl::StripAsciiWhitespace(item)), " is not GROUPID=app"));
    }
    if (!map.emplace(group, app).second) {
      return absl::InvalidArgumentError(absl::StrCat("--app_map: group ", group, " twice"));
    }
  }
  return map;
}

std::string ImportedName(int64_t xxl_id, absl::string_view job_desc) {
  std::string desc;
  for (char c : absl::StripAsciiWhitespace(job_desc)) {
    // One line: controls become spaces.
    desc += (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) ? ' ' : c;
  }
  std::string name = absl::StrCat("xxl-", xxl_id);
  if (!desc.empty()) absl::StrAppend(&name, "-", desc);
  return CutUtf8(name, kMaxNameChars);
}

std::optional<int64_t> ImportedXxlId(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "xxl-")) return std::nullopt;
  size_t digits = 0;
  while (digits < name.size() && absl::ascii_isdigit(static_cast<unsigned char>(name[digits]))) {
    ++digits;
  }
  int64_t id = 0;
  if (digits == 0 || (digits < name.size() && name[digits] != '-') ||
      !absl::SimpleAtoi(name.substr(0, digits), &id) || id <= 0) {
    return std::nullopt;
  }
  return id;
}

std::optional<int64_t> ImportedXxlId(const v1::Job& job) {
  auto it = job.labels().find(kXxlIdLabel);
  int64_t id = 0;
  if (it != job.labels().end() && absl::SimpleAtoi(it->second, &id) && id > 0) return id;
  return ImportedXxlId(job.name());
}

absl::StatusOr<std::string> AppFor(const XxlJob& job, const MappingOptions& options) {
  auto it = options.app_map.find(job.job_group);
  if (it != options.app_map.end()) return it->second;
  const std::string app(absl::StripAsciiWhitespace(job.app_name));
  if (!app.empty()) return app;
  return absl::NotFoundError(absl::StrCat("job_group ", job.job_group,
                                          " has no app: pass --app_map=", job.job_group,
                                          "=<jobwheel app>"));
}

MappedJob MapXxlJob(const XxlJob& in, const std::string& app, const MappingOptions& options) {
  MappedJob out;
  out.xxl_id = in.id;
  v1::Job& job = out.job;
  job.set_app(app);
  job.set_name(ImportedName(in.id, in.job_desc));
  job.set_description(in.job_desc);
  job.set_owner(std::string(absl::StripAsciiWhitespace(in.author)));
  for (absl::string_view email : absl::StrSplit(in.alarm_email, ',', absl::SkipWhitespace())) {
    job.add_alarm_contacts(std::string(absl::StripAsciiWhitespace(email)));
  }
  job.set_param(in.executor_param);
  job.set_enabled(in.trigger_status == 1);
  (*job.mutable_labels())[kImportedFromLabel] = "xxl-job";
  (*job.mutable_labels())[kXxlIdLabel] = absl::StrCat(in.id);
  for (const auto& map : {MapSchedule(in, options, out), MapStrategies(in, out), MapGlue(in, out),
                          MapLimits(in, out)}) {
    if (out.skip.empty()) out.skip = map;
  }
  for (int64_t child : in.child_job_ids) {
    if (child == in.id) {
      out.notes.push_back(absl::StrCat("child job ", child, " is the job itself: link dropped"));
    } else if (std::find(out.xxl_children.begin(), out.xxl_children.end(), child) ==
               out.xxl_children.end()) {
      out.xxl_children.push_back(child);
    }
  }
  return out;
}

}  // namespace jobwheel::ctl::xxl
