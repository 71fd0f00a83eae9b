#ifndef JOBWHEEL_SERVICES_SCHEDULER_FOLLOWUP_PLAN_H_
#define JOBWHEEL_SERVICES_SCHEDULER_FOLLOWUP_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jobwheel/v1/types.pb.h"
#include "services/scheduler/alarm.h"

namespace jobwheel::scheduler {

// What follows a finished run, free of the database: a retry, an alarm, or its child jobs.

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
  std::string app;  // The run's.
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

struct FollowupPlan {
  // Every run considered: each is followed up once, whatever follows.
  std::vector<int64_t> done;
  std::vector<RetryFire> retries;
  std::vector<ChildFire> children;
  // Sent after the transaction commits.
  std::vector<AlarmEvent> alarms;
};

// Whether a run in `status` failed (FAILED, TIMED_OUT, LOST; not KILLED or DISCARDED).
bool RunFailed(jobwheel::v1::RunStatus status);

// For each run: failed with retries left (attempt < fail_retry_count) → a retry at attempt + 1
// (a broadcast shard, or a shard of a manual sharded run, retries as that shard alone; others
// with no shard); failed with retries spent → one alarm (the result message, else the trigger
// message); SUCCEEDED → a fire of each child job. A run of a deleted job is only marked done.
FollowupPlan PlanFollowups(const std::vector<FinishedRun>& runs);

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_FOLLOWUP_PLAN_H_
