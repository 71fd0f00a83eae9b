#include "services/scheduler/admin/job_validation.h"

#include <algorithm>
#include <deque>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/base/status_macros.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"
#include "services/scheduler/cron.h"
#include "services/scheduler/schedule.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::v1::Job;

absl::Status Invalid(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

// Number of UTF-8 code points (protobuf already rejects invalid UTF-8 in strings).
int64_t Utf8Length(absl::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

absl::Status CheckLength(absl::string_view field, absl::string_view value, int64_t max) {
  if (Utf8Length(value) > max) {
    return Invalid(field,
                   absl::StrCat("must be at most ", max, " characters, got ", Utf8Length(value)));
  }
  return absl::OkStatus();
}

// Checks `value` is 1..max characters from [A-Za-z0-9] plus `extra`.
absl::Status CheckToken(absl::string_view field, absl::string_view value, int max,
                        absl::string_view extra) {
  if (value.empty()) return Invalid(field, "must not be empty");
  if (static_cast<int>(value.size()) > max) {
    return Invalid(field, absl::StrCat("must be at most ", max, " characters, got ", value.size()));
  }
  for (char c : value) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        extra.find(c) == absl::string_view::npos) {
      std::vector<std::string> allowed;
      for (char e : extra) allowed.push_back(absl::StrCat("'", std::string(1, e), "'"));
      return Invalid(
          field, absl::StrCat("invalid character '", absl::CHexEscape(std::string(1, c)),
                              "' (allowed: letters, digits, ", absl::StrJoin(allowed, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

constexpr absl::string_view kOutputOnly[] = {"id", "script_version", "next_fire_time",
                                             "create_time", "update_time"};

bool IsOutputOnly(absl::string_view name) {
  for (absl::string_view f : kOutputOnly) {
    if (f == name) return true;
  }
  return false;
}

void CopyOutputOnly(const Job& from, Job* to) {
  to->set_id(from.id());
  to->set_script_version(from.script_version());
  if (from.has_next_fire_time()) {
    *to->mutable_next_fire_time() = from.next_fire_time();
  } else {
    to->clear_next_fire_time();
  }
  if (from.has_create_time()) {
    *to->mutable_create_time() = from.create_time();
  } else {
    to->clear_create_time();
  }
  if (from.has_update_time()) {
    *to->mutable_update_time() = from.update_time();
  } else {
    to->clear_update_time();
  }
}

// Validates job.run_retention; the global retention (both zero) is stored as none.
absl::Status NormalizeRunRetention(Job& job) {
  if (job.has_run_retention()) {
    const jobwheel::v1::RunRetention& r = job.run_retention();
    const absl::Duration age = absl::Trunc(FromProto(r.max_age()), absl::Milliseconds(1));
    if (age != absl::ZeroDuration() && (age < kMinRunMaxAge || age > kMaxRunMaxAge)) {
      return Invalid("job.run_retention.max_age",
                     absl::StrCat("must be 0 (the global retention) or between 1m and 3660 days, "
                                  "got ",
                                  absl::FormatDuration(FromProto(r.max_age()))));
    }
    if (r.keep_last() < 0 || r.keep_last() > kMaxRunKeepLast) {
      return Invalid(
          "job.run_retention.keep_last",
          absl::StrCat("must be between 0 and ", kMaxRunKeepLast, ", got ", r.keep_last()));
    }
    if (age == absl::ZeroDuration() && r.keep_last() == 0) {
      job.clear_run_retention();  // The global retention: stored as none.
    } else {
      *job.mutable_run_retention()->mutable_max_age() = ToProtoDuration(age);
      if (age == absl::ZeroDuration()) job.mutable_run_retention()->clear_max_age();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Job> NormalizeJob(const Job& in, absl::Time created) {
  Job job = in;
  job.clear_id();
  job.clear_script_version();
  job.clear_next_fire_time();
  job.clear_create_time();
  job.clear_update_time();

  absl::Status s = CheckToken("job.app", job.app(), kMaxAppLength, "_.-");
  if (!s.ok()) return s;

  if (absl::StripAsciiWhitespace(job.name()).empty())
    return Invalid("job.name", "must not be empty");
  if (!(s = CheckLength("job.name", job.name(), kMaxNameLength)).ok()) return s;
  if (!(s = CheckLength("job.description", job.description(), kMaxDescriptionLength)).ok()) {
    return s;
  }
  if (!(s = CheckLength("job.owner", job.owner(), kMaxOwnerLength)).ok()) return s;
  if (job.alarm_contacts_size() > kMaxAlarmContacts) {
    return Invalid("job.alarm_contacts", absl::StrCat("at most ", kMaxAlarmContacts,
                                                      " entries, got ", job.alarm_contacts_size()));
  }
  for (int i = 0; i < job.alarm_contacts_size(); ++i) {
    const std::string field = absl::StrCat("job.alarm_contacts[", i, "]");
    if (absl::StripAsciiWhitespace(job.alarm_contacts(i)).empty()) {
      return Invalid(field, "must not be empty");
    }
    if (!(s = CheckLength(field, job.alarm_contacts(i), kMaxAlarmContactLength)).ok()) return s;
  }

  if (!(s = ValidateLabels(job.labels(), "job.labels")).ok()) return s;
  if (!(s = NormalizeRunRetention(job)).ok()) return s;

  if (!job.has_schedule()) return Invalid("job.schedule", "must be set");
  auto schedule = Schedule::FromProto(job.schedule(), created, "job.schedule");
  if (!schedule.ok()) return schedule.status();
  if (job.schedule().has_cron() && job.schedule().cron().time_zone().empty()) {
    job.mutable_schedule()->mutable_cron()->set_time_zone("UTC");
  }
  // An enabled job that could never fire is a mistake (Feb 30, a past year);
  // Quartz accepts such expressions, so the parser does too.
  if (job.enabled() && job.schedule().has_cron() && !schedule->NextAfter(created).has_value()) {
    return Invalid(
        "job.schedule.cron.expression",
        absl::StrCat("\"", absl::CHexEscape(job.schedule().cron().expression()),
                     "\" never fires (no fire time after ",
                     absl::FormatTime("%Y-%m-%dT%H:%M:%S%Ez", created, absl::UTCTimeZone()),
                     " up to ", kCronMaxYear, ")"));
  }
  if (job.schedule().has_fix_delay()) {
    // Kept to the millisecond, as stored.
    *job.mutable_schedule()->mutable_fix_delay()->mutable_delay() =
        ToProtoDuration(schedule->delay());
  }
  if (job.schedule().has_fix_rate() && !job.schedule().fix_rate().has_start_time()) {
    *job.mutable_schedule()->mutable_fix_rate()->mutable_start_time() =
        ToProto(absl::FromUnixSeconds(absl::ToUnixSeconds(created)));
  }

  if (!jobwheel::v1::MisfireStrategy_IsValid(job.misfire_strategy())) {
    return Invalid("job.misfire_strategy", absl::StrCat("unknown value ", job.misfire_strategy()));
  }
  if (job.misfire_strategy() == jobwheel::v1::MISFIRE_STRATEGY_UNSPECIFIED) {
    job.set_misfire_strategy(jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING);
  }
  if (!jobwheel::v1::RoutingStrategy_IsValid(job.routing_strategy())) {
    return Invalid("job.routing_strategy", absl::StrCat("unknown value ", job.routing_strategy()));
  }
  if (job.routing_strategy() == jobwheel::v1::ROUTING_STRATEGY_UNSPECIFIED) {
    job.set_routing_strategy(jobwheel::v1::ROUTING_STRATEGY_FIRST);
  }
  if (!jobwheel::v1::BlockStrategy_IsValid(job.block_strategy())) {
    return Invalid("job.block_strategy", absl::StrCat("unknown value ", job.block_strategy()));
  }
  if (job.block_strategy() == jobwheel::v1::BLOCK_STRATEGY_UNSPECIFIED) {
    job.set_block_strategy(jobwheel::v1::BLOCK_STRATEGY_SERIAL_EXECUTION);
  }
  if (!jobwheel::v1::GlueType_IsValid(job.glue_type())) {
    return Invalid("job.glue_type", absl::StrCat("unknown value ", job.glue_type()));
  }
  if (job.glue_type() == jobwheel::v1::GLUE_TYPE_UNSPECIFIED) {
    job.set_glue_type(jobwheel::v1::GLUE_TYPE_HANDLER);
  }

  if (IsScript(job.glue_type())) {
    if (!job.handler().empty() &&
        !(s = CheckToken("job.handler", job.handler(), kMaxHandlerLength, "_.:-")).ok()) {
      return s;
    }
    if (job.script_source().empty()) {
      return Invalid("job.script_source",
                     absl::StrCat("must not be empty for glue_type ",
                                  jobwheel::v1::GlueType_Name(job.glue_type())));
    }
    if (job.script_source().size() > static_cast<size_t>(kMaxScriptBytes)) {
      return Invalid("job.script_source", absl::StrCat("must be at most ", kMaxScriptBytes,
                                                       " bytes, got ", job.script_source().size()));
    }
  } else {
    if (!(s = CheckToken("job.handler", job.handler(), kMaxHandlerLength, "_.:-")).ok()) return s;
    if (!job.script_source().empty()) {
      return Invalid("job.script_source", "must be empty for glue_type GLUE_TYPE_HANDLER");
    }
  }

  if (job.param().size() > static_cast<size_t>(kMaxParamBytes)) {
    return Invalid("job.param", absl::StrCat("must be at most ", kMaxParamBytes, " bytes, got ",
                                             job.param().size()));
  }

  if (job.has_timeout()) {
    const auto& t = job.timeout();
    if (t.seconds() < 0 || t.nanos() < 0) return Invalid("job.timeout", "must not be negative");
    if (t.nanos() > 999999999) return Invalid("job.timeout", "nanos must be below 1e9");
    const absl::Duration d = FromProto(t);
    if (d > kMaxTimeout) {
      return Invalid("job.timeout",
                     absl::StrCat("must be at most ", absl::FormatDuration(kMaxTimeout), ", got ",
                                  absl::FormatDuration(d)));
    }
    const absl::Duration ms = absl::Milliseconds(absl::ToInt64Milliseconds(d));
    if (ms == absl::ZeroDuration()) {
      job.clear_timeout();
    } else {
      *job.mutable_timeout() = ToProtoDuration(ms);
    }
  }

  if (job.fail_retry_count() < 0 || job.fail_retry_count() > kMaxFailRetryCount) {
    return Invalid("job.fail_retry_count",
                   absl::StrCat("must be between 0 and ", kMaxFailRetryCount, ", got ",
                                job.fail_retry_count()));
  }

  if (job.child_job_ids_size() > kMaxChildJobs) {
    return Invalid("job.child_job_ids", absl::StrCat("at most ", kMaxChildJobs, " entries, got ",
                                                     job.child_job_ids_size()));
  }
  absl::flat_hash_set<int64_t> seen;
  for (int i = 0; i < job.child_job_ids_size(); ++i) {
    const int64_t child = job.child_job_ids(i);
    const std::string field = absl::StrCat("job.child_job_ids[", i, "]");
    if (child <= 0) return Invalid(field, absl::StrCat("must be a positive job id, got ", child));
    if (in.id() != 0 && child == in.id()) {
      return Invalid(field, absl::StrCat("job ", child, " cannot be its own child"));
    }
    if (!seen.insert(child).second) return Invalid(field, absl::StrCat("duplicate job ", child));
  }
  return job;
}

absl::Status CheckChildGraph(int64_t self_id, const Job& job, const ChildGraph& graph) {
  for (int i = 0; i < job.child_job_ids_size(); ++i) {
    const int64_t child = job.child_job_ids(i);
    if (self_id != 0 && child == self_id) {
      return Invalid(absl::StrCat("job.child_job_ids[", i, "]"),
                     absl::StrCat("job ", child, " cannot be its own child"));
    }
    if (!graph.existing.contains(child)) {
      return Invalid(absl::StrCat("job.child_job_ids[", i, "]"),
                     absl::StrCat("job ", child, " does not exist"));
    }
  }
  if (self_id == 0) return absl::OkStatus();  // Nothing references a job being created.

  const std::vector<int64_t> own(job.child_job_ids().begin(), job.child_job_ids().end());
  auto children_of = [&](int64_t id) -> const std::vector<int64_t>* {
    if (id == self_id) return &own;
    auto it = graph.children.find(id);
    return it == graph.children.end() ? nullptr : &it->second;
  };
  // Breadth-first from self_id: the first edge back to self_id closes the shortest cycle.
  absl::flat_hash_map<int64_t, int64_t> parent;
  std::deque<int64_t> queue = {self_id};
  while (!queue.empty()) {
    const int64_t node = queue.front();
    queue.pop_front();
    const std::vector<int64_t>* next = children_of(node);
    if (next == nullptr) continue;
    for (int64_t c : *next) {
      if (c == self_id) {
        std::vector<int64_t> path = {self_id};
        for (int64_t n = node; n != self_id; n = parent[n]) path.push_back(n);
        path.push_back(self_id);
        std::reverse(path.begin() + 1, path.end() - 1);
        return Invalid("job.child_job_ids",
                       absl::StrCat("cycle ", absl::StrJoin(path, " \xE2\x86\x92 ")));
      }
      if (parent.emplace(c, node).second) queue.push_back(c);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Job> ApplyUpdateMask(const Job& current, const Job& patch,
                                    const google::protobuf::FieldMask& mask) {
  if (mask.paths_size() == 0) {
    Job merged = patch;
    CopyOutputOnly(current, &merged);
    return merged;
  }
  const google::protobuf::Descriptor* desc = Job::descriptor();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  for (int i = 0; i < mask.paths_size(); ++i) {
    const std::string& path = mask.paths(i);
    const std::string field = absl::StrCat("update_mask.paths[", i, "]");
    const google::protobuf::FieldDescriptor* f = desc->FindFieldByName(path);
    if (f == nullptr) {
      return Invalid(field, absl::StrCat("unknown field \"", absl::CHexEscape(path), "\""));
    }
    if (IsOutputOnly(path)) {
      return Invalid(field, absl::StrCat("field \"", path, "\" is output only"));
    }
    bool dup = false;
    for (const auto* g : fields) dup = dup || g == f;
    if (!dup) fields.push_back(f);
  }
  Job merged = current;
  Job source = patch;
  merged.GetReflection()->SwapFields(&merged, &source, fields);
  return merged;
}

namespace {

bool LabelChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
         c == '/';
}

absl::Status CheckLabelText(absl::string_view field, absl::string_view what, absl::string_view text,
                            bool key) {
  if (key && text.empty()) return Invalid(field, absl::StrCat(what, " must not be empty"));
  if (text.size() > static_cast<size_t>(kMaxLabelLength)) {
    return Invalid(field, absl::StrCat(what, " must be at most ", kMaxLabelLength, " characters"));
  }
  for (char c : text) {
    if (!LabelChar(c)) {
      return Invalid(field, absl::StrCat(what, " may hold only letters, digits and . _ - /"));
    }
  }
  if (key && !absl::ascii_isalnum(static_cast<unsigned char>(text[0]))) {
    return Invalid(field, absl::StrCat(what, " must start with a letter or digit"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateLabels(const google::protobuf::Map<std::string, std::string>& labels,
                            absl::string_view field) {
  if (labels.size() > static_cast<size_t>(kMaxLabels)) {
    return Invalid(field, absl::StrCat("at most ", kMaxLabels, " labels, got ", labels.size()));
  }
  for (const auto& [k, v] : labels) {
    const std::string f = absl::StrCat(field, "[\"", absl::CHexEscape(k), "\"]");
    absl::Status s = CheckLabelText(f, "the key", k, true);
    if (s.ok()) s = CheckLabelText(f, "the value", v, false);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LabelRequirement>> ParseLabelSelector(absl::string_view selector) {
  std::vector<LabelRequirement> out;
  if (selector.empty()) return out;
  for (absl::string_view part : absl::StrSplit(selector, ',')) {
    part = absl::StripAsciiWhitespace(part);
    LabelRequirement r;
    size_t eq = part.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return Invalid("label_selector", absl::StrCat("want key=value or key!=value, got \"",
                                                    absl::CHexEscape(part), "\""));
    }
    r.equal = part[eq - 1] != '!';
    r.key = std::string(absl::StripAsciiWhitespace(part.substr(0, r.equal ? eq : eq - 1)));
    r.value = std::string(absl::StripAsciiWhitespace(part.substr(eq + 1)));
    RETURN_IF_ERROR(CheckLabelText("label_selector", "a key", r.key, true));
    RETURN_IF_ERROR(CheckLabelText("label_selector", "a value", r.value, false));
    out.push_back(std::move(r));
    if (out.size() > static_cast<size_t>(kMaxLabelRequirements)) {
      return Invalid("label_selector",
                     absl::StrCat("at most ", kMaxLabelRequirements, " requirements"));
    }
  }
  return out;
}

absl::StatusOr<int> ValidatePageSize(int32_t page_size) {
  if (page_size < 0 || page_size > kMaxPageSize) {
    return Invalid("page_size",
                   absl::StrCat("must be between 0 and ", kMaxPageSize, ", got ", page_size));
  }
  return page_size == 0 ? kDefaultPageSize : page_size;
}

namespace {
constexpr absl::string_view kTokenPrefix = "after:";
}  // namespace

std::string EncodePageToken(int64_t last_id) {
  return absl::WebSafeBase64Escape(absl::StrCat(kTokenPrefix, last_id));
}

absl::StatusOr<int64_t> DecodePageToken(absl::string_view token) {
  if (token.empty()) return 0;
  std::string raw;
  int64_t id = 0;
  if (absl::WebSafeBase64Unescape(token, &raw)) {
    absl::string_view rest = raw;
    if (absl::ConsumePrefix(&rest, kTokenPrefix) && absl::SimpleAtoi(rest, &id) && id > 0) {
      return id;
    }
  }
  return Invalid("page_token", "malformed; pass next_page_token from the previous response");
}

absl::StatusOr<ShardParam> ParseShardParam(absl::string_view text) {
  if (text.empty()) return ShardParam{};
  std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  int32_t i = 0;
  int32_t n = 0;
  auto digits = [](absl::string_view p) {
    if (p.empty() || p.size() > 9) return false;
    for (char c : p) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  if (parts.size() != 2 || !digits(parts[0]) || !digits(parts[1]) ||
      !absl::SimpleAtoi(parts[0], &i) || !absl::SimpleAtoi(parts[1], &n)) {
    return Invalid("shard_param",
                   absl::StrCat("must look like \"i/n\", got \"", absl::CHexEscape(text), "\""));
  }
  if (n < 1 || n > kMaxShardTotal || i < 0 || i >= n) {
    return Invalid("shard_param",
                   absl::StrCat("need 0 <= i < n <= ", kMaxShardTotal, ", got \"", text, "\""));
  }
  return ShardParam{i, n};
}

absl::Status ValidateId(int64_t id, absl::string_view field) {
  if (id <= 0) return Invalid(field, absl::StrCat("must be a positive id, got ", id));
  return absl::OkStatus();
}

}  // namespace jobwheel::scheduler::admin
