#include "services/scheduler/admin/job_access.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/model/proto_enums.h"
#include "services/scheduler/admin/job_store.h"

namespace jobwheel::scheduler::admin {
namespace {

std::string Writer(absl::string_view app) { return absl::StrCat("ADMIN or OPERATOR of app ", app); }

constexpr absl::string_view kScriptNeed =
    "ADMIN to create or edit script jobs (GLUE_TYPE_SCRIPT_SHELL, GLUE_TYPE_SCRIPT_PYTHON)";

}  // namespace

absl::Status CheckWriter(const Principal& p, absl::string_view what) {
  if (IsAdmin(p) || p.role == Role::kOperator) return absl::OkStatus();
  return PermissionDenied(p, what, "ADMIN or OPERATOR");
}

absl::Status CheckCreate(const Principal& p, const jobwheel::v1::Job& job) {
  if (!CanWriteApp(p, job.app())) return PermissionDenied(p, "job.app", Writer(job.app()));
  if (IsScript(job.glue_type()) && !IsAdmin(p)) {
    return PermissionDenied(p, "job.glue_type", kScriptNeed);
  }
  return absl::OkStatus();
}

absl::Status CheckEdit(const Principal& p, const jobwheel::v1::Job& current,
                       const jobwheel::v1::Job& next) {
  RETURN_IF_ERROR(CheckVisible(p, current.app(), JobNotFoundError(current.id())));
  if (!CanWriteApp(p, current.app())) {
    return PermissionDenied(p, absl::StrCat("job ", current.id()), Writer(current.app()));
  }
  if (next.app() != current.app() && !CanWriteApp(p, next.app())) {
    return PermissionDenied(p, "job.app", Writer(next.app()));
  }
  if ((IsScript(current.glue_type()) || IsScript(next.glue_type())) && !IsAdmin(p)) {
    return PermissionDenied(p, "job.glue_type", kScriptNeed);
  }
  return absl::OkStatus();
}

absl::Status CheckRead(const Principal& p, absl::string_view app, absl::string_view what) {
  if (CanReadApp(p, app)) return absl::OkStatus();
  return PermissionDenied(p, what, absl::StrCat("read access to app ", app));
}

absl::Status CheckWrite(const Principal& p, absl::string_view app, absl::string_view what) {
  if (CanWriteApp(p, app)) return absl::OkStatus();
  return PermissionDenied(p, what, Writer(app));
}

absl::Status CheckVisible(const Principal& p, absl::string_view app, absl::Status not_found) {
  if (CanReadApp(p, app)) return absl::OkStatus();
  return not_found;
}

std::optional<std::vector<std::string>> WritableApps(const Principal& p) {
  if (IsAdmin(p) || (p.role == Role::kOperator && p.all_apps)) return std::nullopt;
  if (p.role != Role::kOperator) return std::vector<std::string>();
  return p.apps;
}

absl::StatusOr<std::optional<std::vector<std::string>>> ListScope(const Principal& p,
                                                                  absl::string_view requested_app) {
  if (!requested_app.empty()) {
    if (!CanReadApp(p, requested_app)) {
      return PermissionDenied(p, "app", absl::StrCat("read access to app ", requested_app));
    }
    return std::optional<std::vector<std::string>>();  // The app filter alone confines it.
  }
  absl::optional<std::vector<std::string>> apps = ReadableApps(p);
  if (!apps.has_value()) return std::optional<std::vector<std::string>>();
  return std::optional<std::vector<std::string>>(*std::move(apps));
}

}  // namespace jobwheel::scheduler::admin
