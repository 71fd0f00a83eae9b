#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_JOB_READER_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_JOB_READER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/jobwheelctl/xxl/xxl_job.h"

namespace jobwheel::ctl::xxl {

// Reads XXL-JOB job definitions from `text`, in either form:
// - JSON as the admin's job list answers it (`{"recordsTotal":..,"data":[{...}]}`, also inside
//   a `{"code":200,"data"|"content":{...}}` envelope, or a bare array of jobs), with the
//   admin's lowerCamel names (`jobGroup`, `childJobId`, ...) or the column names; keys it does
//   not know are ignored (each admin version adds some).
// - A tab-separated export of `xxl_job_info` (`mysql -B`): a header row of column names, then
//   one row per job; `\n`, `\t`, `\\` and `\0` escapes are undone and `NULL` is empty. An
//   `app_name` column (a join with xxl_job_group) names each job's app. A column it does not
//   know is an error, as is a row with more or fewer fields than the header.
// Errors are INVALID_ARGUMENT naming the line or entry and the field. Every job needs an `id`
// (positive, unique) and a `job_group`.
absl::StatusOr<std::vector<XxlJob>> ReadXxlJobs(absl::string_view text);

}  // namespace jobwheel::ctl::xxl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_JOB_READER_H_
