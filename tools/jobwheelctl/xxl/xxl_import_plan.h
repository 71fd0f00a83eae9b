#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_IMPORT_PLAN_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_IMPORT_PLAN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "jobwheel/v1/types.pb.h"
#include "tools/jobwheelctl/xxl/xxl_job_mapping.h"

namespace jobwheel::ctl::xxl {

// What an import does with one XXL-JOB job.
enum class ImportAction {
  kCreate,  // No job of its app carries its XXL id yet.
  kExists,  // Imported before (job `existing`): left as it is, children aside.
  kSkip,    // Cannot be mapped (MappedJob::skip says why).
};

struct PlannedJob {
  MappedJob mapped;
  ImportAction action = ImportAction::kCreate;
  v1::Job existing;  // kExists: the jobwheel job found.
  // kExists: the fields where the existing job differs from the export (it is not changed).
  std::vector<std::string> differs;
  // The scheduler's first fire time for the schedule (PreviewFireTimes), unset when unknown.
  std::optional<absl::Time> next_fire;
};

// Matches each mapped job with the jobwheel job an earlier import made of it: same app and
// ImportedXxlId (its label, else its name's prefix) equal to its XXL id (the lowest jobwheel id
// when several). Jobs of other apps, or not imported, are ignored.
std::vector<PlannedJob> PlanImport(std::vector<MappedJob> mapped,
                                   const std::vector<v1::Job>& existing);

// The fields of `have` that differ from `want` (as the scheduler would store `want`), by name.
std::vector<std::string> DifferingFields(const v1::Job& want, const v1::Job& have);

// A job's child links in jobwheel ids, and the XXL children that get no link, with why.
struct ChildLinks {
  std::vector<int64_t> ids;
  std::vector<std::string> dropped;
};

// Resolves `job`'s XXL children through `jobwheel_ids` (XXL id -> jobwheel id of every job
// imported, now or before); `skipped` are the XXL ids of this import that were skipped.
ChildLinks ResolveChildren(const PlannedJob& job, const std::map<int64_t, int64_t>& jobwheel_ids,
                           const std::map<int64_t, std::string>& skipped);

// Whether two child lists hold the same ids (order aside).
bool SameChildren(std::vector<int64_t> a, std::vector<int64_t> b);

}  // namespace jobwheel::ctl::xxl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_IMPORT_PLAN_H_
