#include "services/scheduler/alarm.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/json_escape.h"

namespace jobwheel::scheduler {
namespace {

std::string JsonString(absl::string_view s) { return absl::StrCat("\"", JsonEscape(s), "\""); }

}  // namespace

const char* AlarmKindName(AlarmKind kind) {
  switch (kind) {
    case AlarmKind::kRunFailed:
      return "run_failed";
    case AlarmKind::kRunLost:
      return "run_lost";
    case AlarmKind::kScheduleError:
      return "schedule_error";
    case AlarmKind::kNoExecutor:
      return "no_executor";
  }
  return "unknown";
}

std::string AlarmJson(const AlarmEvent& e) {
  std::vector<std::string> contacts;
  contacts.reserve(e.contacts.size());
  for (const auto& c : e.contacts) contacts.push_back(JsonString(c));
  return absl::StrCat("{\"kind\":", JsonString(AlarmKindName(e.kind)),
                      ",\"key\":", JsonString(e.key), ",\"job_id\":", e.job_id,
                      ",\"job_name\":", JsonString(e.job_name), ",\"app\":", JsonString(e.app),
                      ",\"run_id\":", e.run_id, ",\"status\":", JsonString(e.status),
                      ",\"message\":", JsonString(e.message), ",\"contacts\":[",
                      absl::StrJoin(contacts, ","), "]}");
}

}  // namespace jobwheel::scheduler
