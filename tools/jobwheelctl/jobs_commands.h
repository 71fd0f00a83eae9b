#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_JOBS_COMMANDS_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_JOBS_COMMANDS_H_

#include <vector>

#include "jobwheel/v1/types.pb.h"
#include "tools/jobwheelctl/command.h"

namespace jobwheel::ctl {

// `jobs list|get|create|ensure|pause|resume|delete|trigger|count`: JobAdminService's job RPCs.
Noun JobsNoun();

// Prints jobs as the jobs table (ID, app, name, schedule, handler, enabled, next fire).
void PrintJobs(const std::vector<v1::Job>& jobs);

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_JOBS_COMMANDS_H_
