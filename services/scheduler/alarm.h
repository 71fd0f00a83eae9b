#ifndef JOBWHEEL_SERVICES_SCHEDULER_ALARM_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ALARM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace jobwheel::scheduler {

// Why an alarm is raised.
enum class AlarmKind {
  // A run failed (FAILED, TIMED_OUT) and its retries are spent.
  kRunFailed,
  // A run became LOST (its executor went offline or restarted while it ran).
  kRunLost,
  // A job was stopped because its stored schedule cannot be computed.
  kScheduleError,
  // A fire found no executor to take it (none online for the app, or none fits the job).
  kNoExecutor,
};

// "run_failed", "run_lost", "schedule_error", "no_executor": the outbox's kind and the JSON
// body's "kind".
const char* AlarmKindName(AlarmKind kind);

// One alarm. `key` makes it once-only: the outbox keeps one row per key, and the webhook gets
// it as the Idempotency-Key header, so a receiver can drop a repeated delivery.
struct AlarmEvent {
  AlarmKind kind = AlarmKind::kRunFailed;
  std::string key;
  int64_t job_id = 0;
  std::string job_name;
  std::string app;
  int64_t run_id = 0;  // 0: the alarm is about the job, not one run.
  std::string status;  // The run's ("FAILED", "TIMED_OUT", "LOST"); "" for a job alarm.
  std::string message;
  std::vector<std::string> contacts;
};

// The JSON body posted for an event: {"kind","key","job_id","job_name","app","run_id",
// "status","message","contacts"}.
std::string AlarmJson(const AlarmEvent& event);

// Delivers one alarm body. Implementations are thread-safe and bound each call in time.
class AlarmPoster {
 public:
  virtual ~AlarmPoster() = default;
  // OK once the receiver accepted it (a 2xx answer); UNAVAILABLE (or another error) otherwise.
  virtual absl::Status Post(const std::string& body, const std::string& idempotency_key) = 0;
};

// Accepts every alarm without posting it (no webhook configured): the outbox marks it sent.
class DropAlarmPoster : public AlarmPoster {
 public:
  absl::Status Post(const std::string&, const std::string&) override { return absl::OkStatus(); }
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ALARM_H_
