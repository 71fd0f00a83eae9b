#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_ACCESS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_ACCESS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/auth/token_authenticator.h"
#include "jobwheel/v1/types.pb.h"

// What a caller of JobAdminService may do, by role (see docs/security.md). Pure functions,
// no I/O. A job or run of an app the caller may not read is answered exactly like a missing
// one (NOT_FOUND "job 7 not found"), so ids do not tell what exists in other apps; every other
// refusal is PERMISSION_DENIED naming the field or the job/run.
//   ADMIN: everything. OPERATOR: jobs and runs of its apps, except creating or editing script
//   jobs. VIEWER: reads of its apps ("*": every app; none: no app).
namespace jobwheel::scheduler::admin {

// Admin or operator: may call a write RPC at all (a viewer may not).
absl::Status CheckWriter(const Principal& p, absl::string_view what);
// CreateJob: write access to job.app; script glue types need ADMIN.
absl::Status CheckCreate(const Principal& p, const jobwheel::v1::Job& job);
// UpdateJob, inside the write transaction: NOT_FOUND when the current app is not readable;
// write access to the current and the new app; editing a job that is or becomes a script job
// needs ADMIN.
absl::Status CheckEdit(const Principal& p, const jobwheel::v1::Job& current,
                       const jobwheel::v1::Job& next);
// Read or write access to one job's or run's app; `what` names it ("job 7", "run 12").
absl::Status CheckRead(const Principal& p, absl::string_view app, absl::string_view what);
absl::Status CheckWrite(const Principal& p, absl::string_view app, absl::string_view what);
// `not_found` (JobNotFoundError / RunNotFoundError of the id) when p may not read `app`.
absl::Status CheckVisible(const Principal& p, absl::string_view app, absl::Status not_found);
// The apps p may operate, as JobAdmin's writer scope: nullopt for every app (ADMIN, OPERATOR
// of "*"), an empty list for a VIEWER.
std::optional<std::vector<std::string>> WritableApps(const Principal& p);
// ListJobs/ListRuns: PERMISSION_DENIED when `requested_app` is set but not readable;
// otherwise the apps the list is confined to (nullopt: every app).
absl::StatusOr<std::optional<std::vector<std::string>>> ListScope(const Principal& p,
                                                                  absl::string_view requested_app);

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_ACCESS_H_
