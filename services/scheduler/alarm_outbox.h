#ifndef JOBWHEEL_SERVICES_SCHEDULER_ALARM_OUTBOX_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ALARM_OUTBOX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace jobwheel::scheduler {

// One unsent alarm of the outbox (table alarm_outbox).
struct OutboxAlarm {
  int64_t id = 0;
  std::string kind;
  std::string key;
  std::string payload;
  // Failed deliveries so far.
  int attempts = 0;
};

// The sender's side of the alarm outbox; the monitor pass queues alarms (FireStore). Every
// operation is one transaction; on PostgreSQL it is fenced by the schedule lock, so only the
// leader claims and marks rows (FAILED_PRECONDITION otherwise). Implementations are
// thread-safe.
class AlarmOutbox {
 public:
  virtual ~AlarmOutbox() = default;

  // Whether this replica leads (from memory; no query).
  virtual bool IsLeader() const = 0;
  // Locks up to `limit` unsent rows whose next attempt is at or before `now` (oldest first,
  // skipping rows another transaction holds) and moves their next attempt to `now + lease`:
  // a sender that dies while sending leaves them to be sent again after the lease (the key
  // lets the receiver drop the repeat).
  virtual absl::StatusOr<std::vector<OutboxAlarm>> ClaimDue(absl::Time now, absl::Duration lease,
                                                            int limit) = 0;
  // Delivered: sent_at = `at` (a row already sent keeps its first time).
  virtual absl::Status MarkSent(int64_t id, absl::Time at) = 0;
  // A failed delivery: attempts + 1, last_error, next attempt at `next_attempt`.
  virtual absl::Status MarkFailed(int64_t id, const std::string& error,
                                  absl::Time next_attempt) = 0;
  // Not tried (the webhook just failed for another row): next attempt at `next_attempt`,
  // attempts unchanged.
  virtual absl::Status Postpone(const std::vector<int64_t>& ids, absl::Time next_attempt) = 0;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ALARM_OUTBOX_H_
