#ifndef JOBWHEEL_SERVICES_SCHEDULER_ALARM_OUTBOX_PG_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ALARM_OUTBOX_PG_H_

#include <string>
#include <vector>

#include "pqxx/pqxx"
#include "services/scheduler/alarm.h"
#include "services/scheduler/alarm_outbox.h"
#include "services/scheduler/leader_elector.h"

namespace jobwheel::scheduler {

// The alarm outbox on PostgreSQL (table alarm_outbox): each operation is one
// LeaderElector::RunFenced transaction, so only the leader claims and marks rows.
class PgAlarmOutbox : public AlarmOutbox {
 public:
  explicit PgAlarmOutbox(LeaderElector& elector) : elector_(elector) {}

  bool IsLeader() const override { return elector_.is_leader(); }
  absl::StatusOr<std::vector<OutboxAlarm>> ClaimDue(absl::Time now, absl::Duration lease,
                                                    int limit) override;
  absl::Status MarkSent(int64_t id, absl::Time at) override;
  absl::Status MarkFailed(int64_t id, const std::string& error, absl::Time next_attempt) override;
  absl::Status Postpone(const std::vector<int64_t>& ids, absl::Time next_attempt) override;

 private:
  LeaderElector& elector_;
};

// Inside a transaction (the monitor pass's): queues `events` (ON CONFLICT on the key: nothing)
// and returns how many rows it inserted.
int QueueAlarms(pqxx::work& tx, const std::vector<AlarmEvent>& events);

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ALARM_OUTBOX_PG_H_
