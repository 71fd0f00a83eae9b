#ifndef JOBWHEEL_SERVICES_SCHEDULER_ALARM_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ALARM_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace jobwheel::scheduler {

// A run that failed for good (retries spent).
struct AlarmEvent {
  int64_t job_id = 0;
  std::string job_name;
  std::string app;
  int64_t run_id = 0;
  std::string status;  // "FAILED", "TIMED_OUT", "LOST".
  std::string message;
  std::vector<std::string> contacts;
};

// Where alarms go. Implementations are thread-safe.
class Alarm {
 public:
  virtual ~Alarm() = default;
  virtual absl::Status Send(const AlarmEvent& event) = 0;
};

// Drops alarms (no webhook configured).
class NoAlarm : public Alarm {
 public:
  absl::Status Send(const AlarmEvent&) override { return absl::OkStatus(); }
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ALARM_H_
