#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_JOB_MAPPING_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_JOB_MAPPING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jobwheel/v1/types.pb.h"
#include "tools/jobwheelctl/xxl/xxl_job.h"

namespace jobwheel::ctl::xxl {

// How XXL-JOB's groups and times become jobwheel's.
struct MappingOptions {
  // XXL job_group id -> jobwheel app; wins over an app_name column in the export.
  std::map<int64_t, std::string> app_map;
  // IANA zone for the cron jobs (XXL-JOB evaluates cron in its admin's JVM zone); empty: UTC.
  std::string time_zone;
};

// Parses `--app_map`: "GROUPID=app,GROUPID=app" (spaces around items allowed).
absl::StatusOr<std::map<int64_t, std::string>> ParseAppMap(absl::string_view text);

// One XXL-JOB job as a jobwheel job. `job` has no child ids yet (they are jobwheel ids, known
// once every job exists); `xxl_children` are XXL's. `skip` says why the job cannot be imported
// at all (empty: it can); `notes` say what was mapped with a difference or left out.
struct MappedJob {
  int64_t xxl_id = 0;
  v1::Job job;
  std::vector<int64_t> xxl_children;
  std::vector<std::string> notes;
  std::string skip;
};

// The name an imported job gets: "xxl-<id>-<job_desc>" ("xxl-<id>" without a description), at
// most 128 characters (cut on a UTF-8 boundary). The "xxl-<id>" prefix is how a later import
// recognises the job (ImportedXxlId).
std::string ImportedName(int64_t xxl_id, absl::string_view job_desc);

// The XXL id in the name of a job this importer created; nullopt for any other name.
std::optional<int64_t> ImportedXxlId(absl::string_view name);

// The labels every imported job carries: kImportedFromLabel=xxl-job and kXxlIdLabel=<id>.
inline constexpr char kImportedFromLabel[] = "imported-from";
inline constexpr char kXxlIdLabel[] = "xxl-job-id";

// The XXL id of a job this importer created: its kXxlIdLabel label, else the "xxl-<id>" prefix
// of its name (imports before labels existed, or a label removed by hand); nullopt otherwise.
std::optional<int64_t> ImportedXxlId(const v1::Job& job);

// The app for `job`: the --app_map entry for its group, else its app_name column. NOT_FOUND,
// naming the group, when there is neither.
absl::StatusOr<std::string> AppFor(const XxlJob& job, const MappingOptions& options);

// Maps every field of `job` (its app through AppFor, which must succeed first).
MappedJob MapXxlJob(const XxlJob& job, const std::string& app, const MappingOptions& options);

}  // namespace jobwheel::ctl::xxl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_XXL_XXL_JOB_MAPPING_H_
