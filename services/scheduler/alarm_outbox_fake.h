#ifndef JOBWHEEL_SERVICES_SCHEDULER_ALARM_OUTBOX_FAKE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ALARM_OUTBOX_FAKE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "services/scheduler/alarm.h"
#include "services/scheduler/alarm_outbox.h"

namespace jobwheel::scheduler {

// An in-memory alarm outbox for tests, with the semantics of PgAlarmOutbox (alarm_outbox_pg_test
// checks those against the database). Leads unless told otherwise.
class FakeAlarmOutbox : public AlarmOutbox {
 public:
  struct Row {
    int64_t id = 0;
    AlarmEvent event;
    std::string payload;
    absl::Time created;
    int attempts = 0;
    absl::Time next_attempt;
    std::optional<absl::Time> sent_at;
    std::string last_error;
  };

  // As the monitor pass: queues `event` due at `now`; false when its key is already there.
  bool Queue(const AlarmEvent& event, absl::Time now) {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, row] : rows_) {
      if (row.event.key == event.key) return false;
    }
    Row row;
    row.id = next_id_++;
    row.event = event;
    row.payload = AlarmJson(event);
    row.created = now;
    row.next_attempt = now;
    rows_.emplace(row.id, std::move(row));
    return true;
  }
  std::vector<Row> rows() const {
    absl::MutexLock lock(&mu_);
    std::vector<Row> out;
    for (const auto& [id, row] : rows_) out.push_back(row);
    return out;
  }
  void SetLeader(bool leader) {
    absl::MutexLock lock(&mu_);
    leader_ = leader;
  }

  bool IsLeader() const override {
    absl::MutexLock lock(&mu_);
    return leader_;
  }
  absl::StatusOr<std::vector<OutboxAlarm>> ClaimDue(absl::Time now, absl::Duration lease,
                                                    int limit) override {
    absl::MutexLock lock(&mu_);
    if (!leader_) return absl::FailedPreconditionError("not the leader");
    std::vector<OutboxAlarm> out;
    for (auto& [id, row] : rows_) {
      if (static_cast<int>(out.size()) >= limit) break;
      if (row.sent_at || row.next_attempt > now) continue;
      row.next_attempt = now + lease;
      out.push_back(
          {row.id, AlarmKindName(row.event.kind), row.event.key, row.payload, row.attempts});
    }
    return out;
  }
  absl::Status MarkSent(int64_t id, absl::Time at) override {
    absl::MutexLock lock(&mu_);
    if (!leader_) return absl::FailedPreconditionError("not the leader");
    auto it = rows_.find(id);
    if (it != rows_.end() && !it->second.sent_at) it->second.sent_at = at;
    return absl::OkStatus();
  }
  absl::Status MarkFailed(int64_t id, const std::string& error, absl::Time next) override {
    absl::MutexLock lock(&mu_);
    if (!leader_) return absl::FailedPreconditionError("not the leader");
    auto it = rows_.find(id);
    if (it != rows_.end() && !it->second.sent_at) {
      ++it->second.attempts;
      it->second.last_error = error;
      it->second.next_attempt = next;
    }
    return absl::OkStatus();
  }
  absl::Status Postpone(const std::vector<int64_t>& ids, absl::Time next) override {
    absl::MutexLock lock(&mu_);
    if (!leader_) return absl::FailedPreconditionError("not the leader");
    for (int64_t id : ids) {
      auto it = rows_.find(id);
      if (it != rows_.end() && !it->second.sent_at) it->second.next_attempt = next;
    }
    return absl::OkStatus();
  }

 private:
  mutable absl::Mutex mu_;
  bool leader_ ABSL_GUARDED_BY(mu_) = true;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, Row> rows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ALARM_OUTBOX_FAKE_H_
