#ifndef JOBWHEEL_SERVICES_SCHEDULER_PG_FIRE_STORE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_PG_FIRE_STORE_H_

#include "services/scheduler/fire_store.h"
#include "services/scheduler/leader_elector.h"

namespace jobwheel::scheduler {

// FireStore on PostgreSQL: each operation is one LeaderElector::RunFenced transaction on the
// lock-holding session, so it commits only while this replica holds the schedule lock.
class PgFireStore : public FireStore {
 public:
  explicit PgFireStore(LeaderElector& elector) : elector_(elector) {}

  bool IsLeader() const override { return elector_.is_leader(); }
  absl::StatusOr<ClaimResult> ClaimDueJobs(absl::Time horizon, int limit,
                                           const ClaimPlanner& plan) override;
  absl::StatusOr<PendingPage> LoadPendingFires(const PendingCursor& after, bool all_types,
                                               int limit, const LatePlanner& late) override;
  absl::StatusOr<std::vector<int64_t>> SettleLateFires(const std::vector<int64_t>& fire_ids,
                                                       const LatePlanner& late) override;
  absl::StatusOr<MonitorResult> RunMonitorPass(const MonitorLimits& limits,
                                               const FollowupPlanner& plan) override;
  absl::StatusOr<DelayChainResult> AdvanceDelayChains(int limit) override;
  absl::StatusOr<int> DeleteHistory(absl::Time cutoff, int limit) override;
  absl::StatusOr<int> DeleteAuditHistory(absl::Time cutoff, int limit) override;

 private:
  LeaderElector& elector_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_PG_FIRE_STORE_H_
