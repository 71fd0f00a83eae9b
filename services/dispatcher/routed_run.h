#ifndef JOBWHEEL_SERVICES_DISPATCHER_ROUTED_RUN_H_
#define JOBWHEEL_SERVICES_DISPATCHER_ROUTED_RUN_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "jobwheel/v1/executor.pb.h"
#include "services/dispatcher/dispatch_store.h"
#include "services/dispatcher/trigger_pools.h"

namespace jobwheel::dispatcher {

// A created run to trigger: its request, and its routing strategy's metric label.
struct PendingRun {
  v1::RunRequest request;
  std::string strategy;
};

// A created run and where it goes: to `address`, in a call of trigger pool `pool`.
struct RoutedRun {
  std::string address;
  TriggerPool pool = TriggerPool::kFast;
  PendingRun run;
  // Held runs only (shared by the runs of one fire): to route it again should its executor
  // leave before its time.
  std::shared_ptr<const v1::Fire> fire;
};

// The answer recorded for a run that was never sent: FAILED, "; not triggered: <why>".
inline TriggerOutcome NotTriggered(int64_t run_id, absl::string_view why, absl::Time at) {
  TriggerOutcome o;
  o.run_id = run_id;
  o.status = v1::RUN_STATUS_FAILED;
  o.message_suffix = absl::StrCat("; not triggered: ", why);
  o.at = at;
  return o;
}

// The answer recorded for a run whose trigger call failed with `error`: FAILED,
// "; trigger error: <CODE>: <message>".
inline TriggerOutcome TriggerFailed(int64_t run_id, const absl::Status& error, absl::Time at) {
  TriggerOutcome o;
  o.run_id = run_id;
  o.status = v1::RUN_STATUS_FAILED;
  o.message_suffix = absl::StrCat("; trigger error: ", absl::StatusCodeToString(error.code()), ": ",
                                  error.message());
  o.at = at;
  return o;
}

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_ROUTED_RUN_H_
