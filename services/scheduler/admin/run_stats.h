#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_RUN_STATS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_RUN_STATS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "jobwheel/v1/job_admin.pb.h"
#include "services/scheduler/admin/job_store.h"

// GetRunStats without I/O: the request checked and resolved into a RunStatsQuery (defaults
// filled in), and the store's aggregates turned into the response (every bucket, totals).
namespace jobwheel::scheduler::admin {

inline constexpr absl::Duration kDefaultRunStatsWindow = absl::Hours(24);
inline constexpr absl::Duration kDefaultRunStatsBucket = absl::Hours(1);
inline constexpr absl::Duration kMinRunStatsBucket = absl::Minutes(1);
inline constexpr absl::Duration kMaxRunStatsBucket = absl::Hours(24);
inline constexpr absl::Duration kMaxRunStatsWindow = absl::Hours(31 * 24);
inline constexpr int64_t kMaxRunStatsBuckets = 1000;

// The query for `req` at `now`, or INVALID_ARGUMENT naming the field. end_time defaults to
// now; start_time to end_time - 24 h rounded down to a multiple of the bucket since the Unix
// epoch; the bucket to 1 h. The caller's app scope is the caller's to set.
absl::StatusOr<RunStatsQuery> ResolveRunStatsQuery(const jobwheel::v1::GetRunStatsRequest& req,
                                                   absl::Time now);

// How many buckets the query's window has (the last one may be partial).
int64_t RunStatsBucketCount(const RunStatsQuery& query);

// The response: every bucket of the window oldest first, statuses in RunStatus order with
// zero counts left out, totals over the window.
jobwheel::v1::GetRunStatsResponse BuildRunStatsResponse(const RunStatsQuery& query,
                                                        const RunStatsRows& rows);

// Lateness statistics of `samples` (any order), as PostgreSQL's percentile_cont computes them,
// rounded to microseconds (the database's precision).
LatenessStats SummarizeLateness(std::vector<absl::Duration> samples);
absl::Duration RoundToMicroseconds(absl::Duration d);

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_RUN_STATS_H_
