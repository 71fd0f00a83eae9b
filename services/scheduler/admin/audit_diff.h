#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_AUDIT_DIFF_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_AUDIT_DIFF_H_

#include <vector>

#include "jobwheel/v1/job_admin.pb.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::scheduler::admin {

// The field-level changes between two versions of a job for the audit trail (nullptr: the job
// did not exist before, or no longer exists after). Writable fields only (id, next fire time,
// create and update times, script version and schedule error are the system's), in field
// order; each value as protobuf text (repeated values joined with ", "; a new or deleted job
// lists only the fields it sets, an update both values in full). script_source is never
// copied: it is summarised as its length and script version. Pure.
std::vector<jobwheel::v1::AuditFieldChange> DiffJobs(const jobwheel::v1::Job* before,
                                                     const jobwheel::v1::Job* after);

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_AUDIT_DIFF_H_
