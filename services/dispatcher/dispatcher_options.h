#ifndef JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_OPTIONS_H_
#define JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_OPTIONS_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/grpc/grpc_server.h"
#include "services/dispatcher/outcome_writer.h"
#include "services/dispatcher/request_validation.h"
#include "services/dispatcher/trigger_pools.h"
#include "services/dispatcher/trigger_resolver.h"
#include "services/dispatcher/trigger_sender.h"

namespace jobwheel::dispatcher {

// How the Dispatcher core behaves (its flags share the fields' names).
struct DispatcherOptions {
  absl::Duration run_deadline = absl::Seconds(3);  // Of each RunBatch call.
  // The runs of one Dispatch call go to the executors as one RunBatch call per (executor,
  // trigger pool), split above this many runs (at most 1,000: the SDK's limit).
  size_t max_runs_per_batch = 256;
  // A longer result message is stored cut to this many bytes (at a UTF-8 boundary) with
  // " …(truncated)" appended, so one executor cannot fill the runs table.
  size_t max_result_message_bytes = 64 * 1024;
  size_t max_outcomes_per_write = 2000;
  absl::Duration write_retry = absl::Milliseconds(500);
  // How long a STARTED/QUEUED answer waits (after its arrival, on the clock) for its run's
  // result to carry it; zero: written at once. The run shows PENDING meanwhile.
  absl::Duration trigger_write_delay = absl::Milliseconds(250);
  // Runs of a fire scheduled later than now are held and triggered at its scheduled time,
  // never earlier. A Dispatch with a fire further ahead than this is refused
  // (FAILED_PRECONDITION; the scheduler retries): clocks apart, or a lead above the hold.
  absl::Duration max_trigger_hold = absl::Seconds(2);
  // Held runs are triggered on multiples of this (a fire's scheduled time rounded up): the
  // runs of fires a few milliseconds apart share one RunBatch call instead of one call
  // each (at 5,000 fires/s spread over the second: p99 lateness 27 ms with 2 ms ticks,
  // 9 ms with 5 ms, the executors being less busy). Whole seconds (cron) are exact.
  absl::Duration trigger_tick = absl::Milliseconds(5);
  // A RunBatch call whose answer is lost (deadline, cut connection) leaves its runs to be
  // settled by asking the executor (GetRuns with fence, see TriggerResolver): up to this many
  // attempts, each with this deadline (zero: run_deadline's), with backoff between them. An
  // executor that cannot be asked leaves the runs RUNNING ("trigger answer unknown").
  int get_runs_attempts = 4;
  absl::Duration get_runs_deadline = absl::ZeroDuration();

  // INVALID_ARGUMENT naming the flag of the first value out of range.
  absl::Status Validate() const;

  TriggerSender::Options sender() const { return {run_deadline, max_runs_per_batch}; }
  OutcomeWriter::Options writer() const {
    return {max_outcomes_per_write, write_retry, trigger_write_delay};
  }
  TriggerResolver::Options resolver() const {
    TriggerResolver::Options o;
    o.attempts = get_runs_attempts;
    o.call_deadline = get_runs_deadline > absl::ZeroDuration() ? get_runs_deadline : run_deadline;
    return o;
  }
};

// Everything the dispatcher process is started with (main.cc fills it from its flags and
// files).
struct DispatcherServerOptions {
  std::string listen = "127.0.0.1:7102";
  std::string metrics_address;  // Empty: no /metrics.
  std::string db_dsn;
  // host:port, a gRPC target, or "ipv4:a:1,b:2" for a static list.
  std::string registry_target;
  std::string replica_id;
  std::string executor_token;         // Bootstrap executor token; empty: API tokens only.
  std::string signing_key;            // PEM.
  std::string scheduler_public_keys;  // PEM.
  bool insecure_dev = false;
  int db_pool_size = 8;
  absl::Duration probe_deadline = absl::Milliseconds(500);
  ServerTls server_tls;
  ClientTls client_tls;
  DispatcherOptions dispatcher;
  // Trigger calls in flight per pool and the runs queued behind them (--trigger_*).
  TriggerPools::Options pools;
  RequestLimits limits;

  // INVALID_ARGUMENT naming the flag(s) at fault.
  absl::Status Validate() const;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_OPTIONS_H_
