#include "common/model/proto_enums.h"

#include "absl/strings/strip.h"

namespace jobwheel {

bool IsScript(v1::GlueType glue) {
  return glue == v1::GLUE_TYPE_SCRIPT_SHELL || glue == v1::GLUE_TYPE_SCRIPT_PYTHON;
}

bool IsTerminal(v1::RunStatus status) {
  switch (status) {
    case v1::RUN_STATUS_SUCCEEDED:
    case v1::RUN_STATUS_FAILED:
    case v1::RUN_STATUS_TIMED_OUT:
    case v1::RUN_STATUS_KILLED:
    case v1::RUN_STATUS_LOST:
    case v1::RUN_STATUS_DISCARDED:
      return true;
    default:
      return false;
  }
}

bool IsOpen(v1::RunStatus status) {
  return status == v1::RUN_STATUS_PENDING || status == v1::RUN_STATUS_RUNNING;
}

std::string ShortEnumName(absl::string_view full_name, absl::string_view prefix) {
  absl::ConsumePrefix(&full_name, prefix);
  return std::string(full_name);
}

std::string RunStatusShortName(v1::RunStatus status) {
  return ShortEnumName(v1::RunStatus_Name(status), "RUN_STATUS_");
}

std::string TriggerTypeShortName(v1::TriggerType type) {
  return ShortEnumName(v1::TriggerType_Name(type), "TRIGGER_TYPE_");
}

std::string RoleShortName(v1::Role role) { return ShortEnumName(v1::Role_Name(role), "ROLE_"); }

}  // namespace jobwheel
