#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_VALIDATION_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_VALIDATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/field_mask.pb.h"
#include "jobwheel/v1/types.pb.h"
#include "services/scheduler/admin/job_store.h"

// Pure validation for JobAdminService input: no I/O, no clock. Every error is
// INVALID_ARGUMENT and starts with the field it is about ("job.app: must not be empty").
namespace jobwheel::scheduler::admin {

// Limits, also documented in docs/admin-api.md.
inline constexpr int kMaxAppLength = 64;
inline constexpr int kMaxNameLength = 128;
inline constexpr int kMaxDescriptionLength = 1024;
inline constexpr int kMaxOwnerLength = 128;
inline constexpr int kMaxAlarmContacts = 20;
inline constexpr int kMaxAlarmContactLength = 256;
inline constexpr int kMaxHandlerLength = 128;
inline constexpr int kMaxParamBytes = 64 * 1024;
inline constexpr int kMaxScriptBytes = 64 * 1024;
inline constexpr int kMaxFailRetryCount = 100;
inline constexpr int kMaxChildJobs = 100;
inline constexpr absl::Duration kMaxTimeout = absl::Hours(7 * 24);
inline constexpr int kDefaultPageSize = 50;
inline constexpr int kMaxPageSize = 500;
inline constexpr int kMaxShardTotal = 1000;
inline constexpr int kDefaultPreviewCount = 10;
inline constexpr int kMaxPreviewCount = 100;
inline constexpr int kMaxLabels = 20;
inline constexpr int kMaxLabelLength = 63;
inline constexpr int kMaxLabelRequirements = 20;
inline constexpr absl::Duration kMinRunMaxAge = absl::Minutes(1);
inline constexpr absl::Duration kMaxRunMaxAge = absl::Hours(24 * 3660);
inline constexpr int kMaxRunKeepLast = 1000000;

// Validates every writable field of `job` and returns it normalized: output-only fields
// cleared, UNSPECIFIED enums replaced by their documented defaults, an empty cron time zone
// set to "UTC", a FIX_RATE schedule without start_time anchored at `created` (whole seconds),
// the timeout truncated to milliseconds. An enabled cron job must fire at least once after
// `created` ("job.schedule.cron.expression: ... never fires"). Does not check that child jobs
// exist (see CheckChildGraph).
absl::StatusOr<jobwheel::v1::Job> NormalizeJob(const jobwheel::v1::Job& job, absl::Time created);

// Checks job.child_job_ids against the stored graph: every child exists and, for an existing
// job `self_id` (0 for a new job, which nothing can reference yet), adding its edges closes
// no cycle ("job.child_job_ids: cycle 3 → 5 → 3").
absl::Status CheckChildGraph(int64_t self_id, const jobwheel::v1::Job& job,
                             const ChildGraph& graph);

// `current` with the fields named by `mask` taken from `patch` (top-level snake_case names);
// an empty mask takes every writable field from `patch`. Output-only fields keep `current`'s
// values. Unknown or output-only paths are INVALID_ARGUMENT naming update_mask.paths[i].
absl::StatusOr<jobwheel::v1::Job> ApplyUpdateMask(const jobwheel::v1::Job& current,
                                                  const jobwheel::v1::Job& patch,
                                                  const google::protobuf::FieldMask& mask);

// The labels of a job: at most kMaxLabels; keys 1..kMaxLabelLength characters of
// [A-Za-z0-9._/-] starting with a letter or digit, values up to kMaxLabelLength of the same set.
// `field` names the map ("job.labels"); errors name the key ("job.labels[\"Team!\"]").
absl::Status ValidateLabels(const google::protobuf::Map<std::string, std::string>& labels,
                            absl::string_view field);

// A ListJobs label selector: "k=v,k2!=v2" (see ListJobsRequest.label_selector).
struct LabelRequirement {
  std::string key;
  std::string value;
  bool equal = true;
};
absl::StatusOr<std::vector<LabelRequirement>> ParseLabelSelector(absl::string_view selector);

// page_size 0 → default; otherwise 1..kMaxPageSize.
absl::StatusOr<int> ValidatePageSize(int32_t page_size);

// Opaque keyset-pagination tokens carrying the last id of the previous page.
std::string EncodePageToken(int64_t last_id);
// Empty token → 0. A malformed token is INVALID_ARGUMENT "page_token: ...".
absl::StatusOr<int64_t> DecodePageToken(absl::string_view token);

struct ShardParam {
  int32_t index = 0;
  int32_t total = 0;
};
// "i/n" with 0 <= i < n <= kMaxShardTotal; empty → {0, 0}.
absl::StatusOr<ShardParam> ParseShardParam(absl::string_view text);

// INVALID_ARGUMENT "<field>: must be a positive id" unless id > 0.
absl::Status ValidateId(int64_t id, absl::string_view field);

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_JOB_VALIDATION_H_
