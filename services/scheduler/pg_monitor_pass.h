#ifndef JOBWHEEL_SERVICES_SCHEDULER_PG_MONITOR_PASS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_PG_MONITOR_PASS_H_

#include <cstdint>
#include <vector>

#include "jobwheel/v1/types.pb.h"
#include "pqxx/pqxx"
#include "services/scheduler/fire_store.h"
#include "services/scheduler/followup_plan.h"

namespace jobwheel::scheduler {

// FireStore::RunMonitorPass on PostgreSQL, inside the caller's fenced transaction: the lost
// runs ended first, the finished runs and unscheduled jobs locked for the plan, what it plans
// written (retry and child fires, runs followed up, jobs stopped, alarms queued), and the stale
// PENDING runs failed. One step per private method, in that order.
class PgMonitorPass {
 public:
  // `epoch`: this term's fencing epoch, written on the fires the pass inserts (read before the
  // transaction: LeaderElector::epoch() takes the lock RunFenced holds).
  PgMonitorPass(pqxx::work& tx, const FireStore::MonitorLimits& limits, int64_t epoch)
      : tx_(tx), limits_(limits), epoch_(epoch) {}

  FireStore::MonitorResult Run(const FireStore::FollowupPlanner& plan);

 private:
  // RUNNING runs whose executor is gone (per limits_) made LOST; added to `result`.
  void EndLostRuns(FireStore::MonitorResult& result);
  // Up to limits_.batch finished runs not yet followed up, oldest first, locked.
  std::vector<FinishedRun> LockFinishedRuns();
  // Up to limits_.batch enabled jobs with a schedule of their own but no next fire time.
  std::vector<jobwheel::v1::Job> LockUnscheduledJobs();
  // Each returns how many rows it wrote.
  int WriteRetries(const std::vector<RetryFire>& retries);
  int WriteChildren(const std::vector<ChildFire>& children);
  void MarkFollowedUp(const std::vector<int64_t>& run_ids);
  int StopJobs(const std::vector<ScheduleStop>& stops);
  int FailStalePending();

  pqxx::work& tx_;
  const FireStore::MonitorLimits& limits_;
  const int64_t epoch_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_PG_MONITOR_PASS_H_
