#ifndef JOBWHEEL_SERVICES_SCHEDULER_FOLLOWUP_PLAN_H_
#define JOBWHEEL_SERVICES_SCHEDULER_FOLLOWUP_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "jobwheel/v1/types.pb.h"
#include "services/scheduler/alarm.h"

namespace jobwheel::scheduler {

// What the monitor pass decides, free of the database: what follows a finished run (a retry,
// an alarm, its child jobs), and which jobs stop because their schedule cannot be computed.

// A finished run not yet followed up, with what its fire and job say.
struct FinishedRun {
  int64_t run_id = 0;
  int64_t job_id = 0;
  jobwheel::v1::RunStatus status = jobwheel::v1::RUN_STATUS_UNSPECIFIED;
  int attempt = 0;
  int shard_index = 0;
  int shard_total = 0;
  std::string result_message;
  std::string trigger_message;
  std::string app;               // The run's.
  std::string executor_address;  // The run's ("": no executor took it).
  absl::Time trigger_time;
  // The fire's parameter override (nullopt: none).
  std::optional<std::string> fire_param;
  // The job was deleted: nothing follows.
  bool job_deleted = false;
  int fail_retry_count = 0;
  std::vector<int64_t> child_job_ids;
  std::string job_name;
  std::vector<std::string> alarm_contacts;
  // The job's (nullopt when it was deleted).
  std::optional<jobwheel::v1::RoutingStrategy> routing_strategy;
};

// A RETRY fire to write.
struct RetryFire {
  int64_t job_id = 0;
  int64_t parent_run_id = 0;
  int attempt = 0;
  int shard_index = 0;
  int shard_total = 0;
  std::optional<std::string> param;
};

// A PARENT (child job) fire to write; it fires only if the child is in the parent's app or in
// the parent's child_scope, which the store checks as it writes.
struct ChildFire {
  int64_t job_id = 0;
  int64_t parent_run_id = 0;
  int64_t parent_job_id = 0;
};

// A job to stop (enabled = false, next fire time cleared, schedule_error = error).
struct ScheduleStop {
  int64_t job_id = 0;
  std::string error;
};

struct FollowupPlan {
  // Every run considered: each is followed up once, whatever follows.
  std::vector<int64_t> done;
  std::vector<RetryFire> retries;
  std::vector<ChildFire> children;
  std::vector<ScheduleStop> stops;
  // Queued in the outbox by the same transaction (one row per key); the AlarmSender sends them.
  std::vector<AlarmEvent> alarms;
};

// Whether a run in `status` failed (FAILED, TIMED_OUT, LOST; not KILLED or DISCARDED).
bool RunFailed(jobwheel::v1::RunStatus status);

// A no-executor alarm is raised at most once per job in this window (its key names the
// window), so a job firing every second with no executor online does not flood the webhook.
inline constexpr absl::Duration kNoExecutorAlarmWindow = absl::Hours(1);

// For each run: failed with retries left (attempt < fail_retry_count) → a retry at attempt + 1
// (a broadcast shard, or a shard of a manual sharded run, retries as that shard alone; others
// with no shard); SUCCEEDED → a fire of each child job. Alarms (message: the result message,
// else the trigger message):
//  - FAILED with no executor ("" executor address: the dispatcher found none online, or none
//    fitting) → kNoExecutor, retries left or not, keyed per job and kNoExecutorAlarmWindow of
//    its trigger time ("no_executor/<job>/<window start, Unix seconds>");
//  - LOST → kRunLost, retries left or not ("run_lost/<run>");
//  - otherwise failed with retries spent → kRunFailed ("run_failed/<run>").
// A run of a deleted job is only marked done.
FollowupPlan PlanFollowups(const std::vector<FinishedRun>& runs);

// For enabled jobs with a schedule of their own (CRON, FIX_RATE) whose next fire time is not
// set: a job whose stored schedule no longer parses (the claim cleared its next fire time)
// stops, with the error and a kScheduleError alarm ("schedule_error/<job>/<update time, Unix
// microseconds>", so a job stopped again after an edit alarms again). A valid schedule that
// has simply ended is left alone. Appends to `plan`.
void PlanScheduleStops(const std::vector<jobwheel::v1::Job>& jobs, FollowupPlan& plan);

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_FOLLOWUP_PLAN_H_
