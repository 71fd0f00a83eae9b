#include "tools/jobwheelctl/xxl/xxl_job_reader.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace jobwheel::ctl::xxl {
namespace {

using google::protobuf::Value;

enum class Kind { kText, kNumber, kIds, kIgnored };

// One column of xxl_job_info (or the joined app_name) and its name in the admin's JSON.
struct Field {
  absl::string_view column;
  absl::string_view json;
  Kind kind;
  std::string XxlJob::*text = nullptr;
  int64_t XxlJob::*number = nullptr;
};

const Field kFields[] = {
    {"id", "id", Kind::kNumber, nullptr, &XxlJob::id},
    {"job_group", "jobGroup", Kind::kNumber, nullptr, &XxlJob::job_group},
    {"app_name", "appName", Kind::kText, &XxlJob::app_name},
    {"job_desc", "jobDesc", Kind::kText, &XxlJob::job_desc},
    {"add_time", "addTime", Kind::kIgnored},
    {"update_time", "updateTime", Kind::kIgnored},
    {"author", "author", Kind::kText, &XxlJob::author},
    {"alarm_email", "alarmEmail", Kind::kText, &XxlJob::alarm_email},
    {"schedule_type", "scheduleType", Kind::kText, &XxlJob::schedule_type},
    {"schedule_conf", "scheduleConf", Kind::kText, &XxlJob::schedule_conf},
    {"job_cron", "jobCron", Kind::kText, &XxlJob::job_cron},
    {"misfire_strategy", "misfireStrategy", Kind::kText, &XxlJob::misfire_strategy},
    {"executor_route_strategy", "executorRouteStrategy", Kind::kText,
     &XxlJob::executor_route_strategy},
    {"executor_handler", "executorHandler", Kind::kText, &XxlJob::executor_handler},
    {"executor_param", "executorParam", Kind::kText, &XxlJob::executor_param},
    {"executor_block_strategy", "executorBlockStrategy", Kind::kText,
     &XxlJob::executor_block_strategy},
    {"executor_timeout", "executorTimeout", Kind::kNumber, nullptr, &XxlJob::executor_timeout},
    {"executor_fail_retry_count", "executorFailRetryCount", Kind::kNumber, nullptr,
     &XxlJob::executor_fail_retry_count},
    {"glue_type", "glueType", Kind::kText, &XxlJob::glue_type},
    {"glue_source", "glueSource", Kind::kText, &XxlJob::glue_source},
    {"glue_remark", "glueRemark", Kind::kText, &XxlJob::glue_remark},
    {"glue_updatetime", "glueUpdatetime", Kind::kIgnored},
    {"child_jobid", "childJobId", Kind::kIds},
    {"trigger_status", "triggerStatus", Kind::kNumber, nullptr, &XxlJob::trigger_status},
    {"trigger_last_time", "triggerLastTime", Kind::kIgnored},
    {"trigger_next_time", "triggerNextTime", Kind::kIgnored},
};

absl::Status Invalid(absl::string_view where, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", message));
}

std::string Quote(absl::string_view s) { return absl::StrCat("\"", absl::CHexEscape(s), "\""); }

const Field* ByColumn(absl::string_view column) {
  for (const Field& f : kFields) {
    if (f.column == column) return &f;
  }
  return nullptr;
}

const Field* ByJsonKey(absl::string_view key) {
  for (const Field& f : kFields) {
    if (f.json == key || f.column == key) return &f;
  }
  return nullptr;
}

// Sets `field` of `job` from its text `raw`.
absl::Status Set(const Field& field, absl::string_view raw, absl::string_view where, XxlJob& job) {
  const std::string at = absl::StrCat(where, ": ", field.column);
  switch (field.kind) {
    case Kind::kIgnored:
      return absl::OkStatus();
    case Kind::kText:
      job.*field.text = std::string(raw);
      return absl::OkStatus();
    case Kind::kNumber: {
      absl::string_view t = absl::StripAsciiWhitespace(raw);
      int64_t n = 0;
      if (t.empty()) return absl::OkStatus();
      if (!absl::SimpleAtoi(t, &n)) return Invalid(at, "not a whole number: " + Quote(raw));
      job.*field.number = n;
      return absl::OkStatus();
    }
    case Kind::kIds:
      for (absl::string_view part : absl::StrSplit(raw, ',', absl::SkipWhitespace())) {
        int64_t id = 0;
        if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &id) || id <= 0) {
          return Invalid(at, absl::StrCat("not a comma list of job ids: ", Quote(raw)));
        }
        job.child_job_ids.push_back(id);
      }
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

// The checks every job gets, however it was read.
absl::Status CheckJobs(const std::vector<XxlJob>& jobs) {
  absl::flat_hash_map<int64_t, std::string> seen;
  for (const XxlJob& job : jobs) {
    if (job.id <= 0) return Invalid(job.where, "id: missing or not a positive number");
    if (job.job_group <= 0 && job.app_name.empty()) {
      return Invalid(job.where, absl::StrCat("job ", job.id, ": job_group: missing"));
    }
    auto [it, inserted] = seen.emplace(job.id, job.where);
    if (!inserted) {
      return Invalid(job.where,
                     absl::StrCat("id ", job.id, " appears twice (also ", it->second, ")"));
    }
  }
  return absl::OkStatus();
}

// A JSON scalar as text: strings as they are, whole numbers without a fraction.
absl::StatusOr<std::optional<std::string>> JsonText(const Value& v, absl::string_view at) {
  switch (v.kind_case()) {
    case Value::kNullValue:
      return std::optional<std::string>();
    case Value::kStringValue:
      return std::optional<std::string>(v.string_value());
    case Value::kBoolValue:
      return std::optional<std::string>(v.bool_value() ? "1" : "0");
    case Value::kNumberValue: {
      const double d = v.number_value();
      if (std::floor(d) == d && std::fabs(d) < 9.0e15) {
        return std::optional<std::string>(absl::StrCat(static_cast<int64_t>(d)));
      }
      return std::optional<std::string>(absl::StrCat(d));
    }
    default:
      return Invalid(at, "expected a string or a number");
  }
}

// The array of jobs: the document itself, its "data" / "content", or one level further in.
const google::protobuf::ListValue* JobList(const Value& v, int depth) {
  if (v.has_list_value()) return &v.list_value();
  if (!v.has_struct_value() || depth > 2) return nullptr;
  for (const char* key : {"data", "content"}) {
    auto it = v.struct_value().fields().find(key);
    if (it == v.struct_value().fields().end()) continue;
    if (const auto* list = JobList(it->second, depth + 1)) return list;
  }
  return nullptr;
}

absl::StatusOr<std::vector<XxlJob>> ReadJson(absl::string_view text) {
  Value root;
  auto parsed = google::protobuf::util::JsonStringToMessage(std::string(text), &root);
  if (!parsed.ok()) return Invalid("not valid JSON", std::string(parsed.message()));
  const google::protobuf::ListValue* list = JobList(root, 0);
  if (list == nullptr) {
    return absl::InvalidArgumentError(
        "not an XXL-JOB job list: expected an array of jobs or an object with a \"data\" array "
        "(what jobinfo/pageList answers)");
  }
  std::vector<XxlJob> jobs;
  for (int i = 0; i < list->values_size(); ++i) {
    const std::string where = absl::StrCat("data[", i, "]");
    const Value& entry = list->values(i);
    if (!entry.has_struct_value()) return Invalid(where, "not an object");
    XxlJob job;
    job.where = where;
    // In key order, so that messages do not depend on the map's order.
    std::map<std::string, const Value*> fields;
    for (const auto& [key, value] : entry.struct_value().fields()) fields[key] = &value;
    for (const auto& [key, value] : fields) {
      const Field* f = ByJsonKey(key);
      if (f == nullptr) continue;  // Another version's field.
      auto t = JsonText(*value, absl::StrCat(where, ": ", key));
      if (!t.ok()) return t.status();
      if (!t->has_value()) continue;
      absl::Status s = Set(*f, **t, where, job);
      if (!s.ok()) return s;
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// Undoes mysql -B's escapes; "NULL" alone is an empty value.
std::string Unescape(absl::string_view s) {
  if (s == "NULL") return "";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '0':
        out += '\0';
        break;
      default:
        out += c;  // "\\" and anything else: the character itself.
    }
  }
  return out;
}

// Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF), as protobuf
// wants its strings.
bool IsUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    const int n = c < 0x80 ? 0 : c < 0xC2 ? -1 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : c < 0xF5 ? 3 : -1;
    if (n < 0 || s.size() - i <= static_cast<size_t>(n)) return false;
    for (int k = 1; k <= n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    const unsigned char c1 = n > 0 ? s[i + 1] : 0;
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0) || (c == 0xF0 && c1 < 0x90) ||
        (c == 0xF4 && c1 >= 0x90)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

std::string KnownColumns() {
  std::vector<std::string> names;
  for (const Field& f : kFields) names.emplace_back(f.column);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<std::vector<XxlJob>> ReadTsv(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  while (!lines.empty() && absl::StripAsciiWhitespace(lines.back()).empty()) lines.pop_back();
  if (lines.empty()) return absl::InvalidArgumentError("empty file: no header row");
  std::vector<const Field*> columns;
  for (absl::string_view name : absl::StrSplit(absl::StripSuffix(lines[0], "\r"), '\t')) {
    const std::string column = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
    const Field* f = ByColumn(column);
    if (f == nullptr) {
      return Invalid("line 1", absl::StrCat("unknown column ", Quote(column),
                                            " (known: ", KnownColumns(), ")"));
    }
    for (const Field* g : columns) {
      if (g == f) return Invalid("line 1", absl::StrCat("column ", Quote(column), " twice"));
    }
    columns.push_back(f);
  }
  std::vector<XxlJob> jobs;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string where = absl::StrCat("line ", i + 1);
    absl::string_view line = absl::StripSuffix(lines[i], "\r");
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    std::vector<absl::string_view> cells = absl::StrSplit(line, '\t');
    if (cells.size() != columns.size()) {
      return Invalid(where, absl::StrCat(cells.size(), " fields, the header has ", columns.size(),
                                         " (a tab or newline inside a value must be written "
                                         "\\t or \\n, as mysql -B does)"));
    }
    XxlJob job;
    job.where = where;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string value = Unescape(cells[c]);
      if (!IsUtf8(value)) return Invalid(where, absl::StrCat(columns[c]->column, ": not UTF-8"));
      absl::Status s = Set(*columns[c], value, where, job);
      if (!s.ok()) return s;
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace

absl::StatusOr<std::vector<XxlJob>> ReadXxlJobs(absl::string_view text) {
  absl::ConsumePrefix(&text, "\xEF\xBB\xBF");  // A byte order mark.
  absl::string_view start = absl::StripLeadingAsciiWhitespace(text);
  absl::StatusOr<std::vector<XxlJob>> jobs =
      !start.empty() && (start[0] == '{' || start[0] == '[') ? ReadJson(text) : ReadTsv(text);
  if (!jobs.ok()) return jobs.status();
  absl::Status s = CheckJobs(*jobs);
  if (!s.ok()) return s;
  return jobs;
}

}  // namespace jobwheel::ctl::xxl
