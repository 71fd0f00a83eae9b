#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_IMPORT_REPORT_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_IMPORT_REPORT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "tools/jobwheelctl/xxl/xxl_import_plan.h"

namespace jobwheel::ctl::xxl {

// `value` as one shell-like token: as it is when it is non-empty and has no space, quote,
// backslash, '=' or control character; else in double quotes with C escapes.
std::string Token(absl::string_view value);

// One job of the plan as one line of `key=value` pairs, in this order:
// xxl_job, action (create, exists, skip), job (exists: the jobwheel id), app, name, schedule,
// misfire, routing, block, glue, handler, param, script (bytes), timeout, retries, enabled,
// alarm, owner, children (XXL ids, "-" for none), next (the first fire time in UTC, when
// known). A skipped job stops after name.
std::string PlanLine(const PlannedJob& job);

// The indented lines below a job's line: "  cannot map: ...", "  note: ...", and for a job
// that exists, "  differs: ..." naming the fields left as they are.
std::vector<std::string> PlanDetails(const PlannedJob& job);

}  // namespace jobwheel::ctl::xxl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_IMPORT_REPORT_H_
