#ifndef JOBWHEEL_SERVICES_DISPATCHER_DISPATCH_STORE_H_
#define JOBWHEEL_SERVICES_DISPATCHER_DISPATCH_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::dispatcher {

// One run the planner wants created for a fire.
struct PlannedRun {
  std::string executor_address;
  int32_t shard_index = 0;
  int32_t shard_total = 1;
  v1::RunStatus status = v1::RUN_STATUS_PENDING;  // PENDING, or FAILED for a failed fire.
  std::string trigger_message;
  // The run's RunRequest.result_key (see result_key.h): the store keeps only its SHA-256
  // (and makes one if empty, so no run it creates is without). Never logged.
  std::string result_key;
  // The executor process at that address when the run was planned (Executor.instance), sent
  // in RunRequest.executor_instance. Not stored.
  std::string executor_instance;
};

// What to do with a PENDING fire: DISPATCHED with its runs, or FAILED with a reason (and one
// FAILED run carrying the reason, so run listings show it).
struct FirePlan {
  v1::FireStatus status = v1::FIRE_STATUS_DISPATCHED;
  std::string reason;
  std::vector<PlannedRun> runs;
  // When the PENDING runs are to be triggered, if later than the call's `now` (a fire handed
  // over ahead of its scheduled time): recorded as their trigger_time.
  absl::Time trigger_time = absl::InfinitePast();
};

// Decides a pending fire's runs; called inside the store's transaction, with the fire locked.
using FirePlanner = std::function<FirePlan(const v1::Fire&)>;

// A run created by this call (the ones to trigger).
struct CreatedRun {
  int64_t run_id = 0;
  PlannedRun planned;
};

// The outcome of one fire of a DispatchFires call.
struct FireResult {
  int64_t fire_id = 0;
  v1::FireStatus status = v1::FIRE_STATUS_UNSPECIFIED;
  std::string message;
  std::vector<int64_t> run_ids;  // All runs of the fire, by shard.
  bool duplicate = false;        // Already dispatched (or failed) earlier: nothing was done.
  bool not_found = false;        // No such fire row (or it belongs to another job).
  std::vector<CreatedRun> created;
};

// The executor's answer to a trigger call, to record on the run.
struct TriggerOutcome {
  int64_t run_id = 0;
  // RUNNING (started or queued), DISCARDED, or FAILED (rejected or call error).
  v1::RunStatus status = v1::RUN_STATUS_RUNNING;
  std::string message_suffix;  // Appended to trigger_message.
  absl::Time at;
};

// A held run moved to another executor before its trigger (its first one left).
struct Reroute {
  int64_t run_id = 0;
  std::string executor_address;
  std::string message_suffix;  // Appended to trigger_message.
};

// What became of one reported result.
//   kRecorded:  the run was PENDING or RUNNING and takes the result.
//   kDuplicate: the run's status was already decided as reported (or a late result was already
//               kept): nothing changes; acknowledged.
//   kLate:      the run's status was already decided otherwise (e.g. LOST, FAILED): the result is
//               kept in words in runs.late_result, the status unchanged; acknowledged.
//   kUnknown:   no such run: refused.
//   kBadKey:    the run has a result key hash and the result's key is missing or wrong: refused,
//               the run untouched.
//   kForbidden: the run belongs to an app outside the reporter's scope: not recorded, not
//               acknowledged, not refused (a reporter with the right token may still report it).
enum class ResultDisposition { kRecorded, kDuplicate, kLate, kUnknown, kBadKey, kForbidden };

// The apps a reporter's token covers; nullopt: every app.
using AppScope = std::optional<std::vector<std::string>>;

struct ResultRecord {
  int64_t run_id = 0;
  ResultDisposition disposition = ResultDisposition::kUnknown;
  v1::RunStatus status = v1::RUN_STATUS_UNSPECIFIED;  // The reported status (when recorded).
};

// Persistence of fires and runs for the dispatcher. Every method is one transaction.
// Implementations: PgDispatchStore. Thread-safe.
class DispatchStore {
 public:
  virtual ~DispatchStore() = default;

  // Locks the fires' rows; for each one still PENDING asks `plan` and writes its runs and new
  // status (dispatch_time = now); fires already decided come back as duplicates with their
  // existing runs. Returns results in the order of `fires`.
  virtual absl::StatusOr<std::vector<FireResult>> DispatchFires(const std::vector<v1::Fire>& fires,
                                                                absl::Time now,
                                                                const FirePlanner& plan) = 0;

  // Applies trigger answers: a PENDING run takes the new status (start_time or end_time =
  // at); a run already past PENDING keeps its status; the message is appended either way.
  // Returns the ids of runs that entered a terminal status through this call.
  virtual absl::StatusOr<std::vector<int64_t>> RecordTriggerOutcomes(
      const std::vector<TriggerOutcome>& outcomes) = 0;

  // Moves PENDING runs to other executors (executor_address, trigger_message). Returns the
  // ids of the runs moved (a run no longer PENDING is left alone).
  virtual absl::StatusOr<std::vector<int64_t>> RerouteRuns(
      const std::vector<Reroute>& reroutes) = 0;

  // Records terminal results on runs still PENDING or RUNNING (start_time: the executor's, else
  // the trigger's, else end_time). Runs of apps outside `scope` are forbidden, then results
  // whose run has a result_key_hash that SHA-256(result_key) does not match (constant-time
  // comparison) are kBadKey; neither touches the run. A run already decided with another status
  // keeps it and gets the result in late_result ("SUCCEEDED code 0 at <end> from <address>:
  // <message>") unless it has one: kLate; otherwise a decided run is a duplicate. Ids without a
  // row are unknown. `results` must have distinct run ids.
  //
  // `answers`: trigger answers of some of these runs that were not written yet (the dispatcher
  // holds STARTED/QUEUED answers briefly, see Dispatcher), at most one per run. The same
  // statement applies each to its run if the run's result is recorded: message_suffix is
  // appended to trigger_message and `at` is the trigger's start_time (after the executor's).
  // An answer whose result is not recorded is not applied; the caller must write it itself.
  virtual absl::StatusOr<std::vector<ResultRecord>> RecordResults(
      const std::vector<v1::RunResult>& results, absl::Time now, const AppScope& scope,
      const std::vector<TriggerOutcome>& answers) = 0;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_DISPATCH_STORE_H_
