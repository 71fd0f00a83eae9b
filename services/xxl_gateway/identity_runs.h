#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_IDENTITY_RUNS_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_IDENTITY_RUNS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/v1/executor.pb.h"
#include "jobwheel/xxl/xxl_wire.pb.h"
#include "services/xxl_gateway/gateway_metrics.h"
#include "services/xxl_gateway/result_sink.h"
#include "services/xxl_gateway/run_ledger.h"
#include "services/xxl_gateway/xxl_client.h"

namespace jobwheel::xxl {

// Who one bridged XXL executor is, on both sides.
struct IdentityInfo {
  std::string key;       // IdentityKey(app, url).
  std::string app;       // Its registryKey: the jobwheel app.
  std::string url;       // Its base URL (ExecutorUrl::base).
  std::string token;     // Its XXL-JOB-ACCESS-TOKEN = its jobwheel executor token.
  std::string address;   // The gateway's host:port that stands for it.
  std::string instance;  // Executor.instance: 32 hex digits of SHA-256(instance_id).
};

struct IdentityRunsOptions {
  bool allow_scripts = false;  // GLUE_SHELL / GLUE_PYTHON reach the XXL executor.
  absl::Duration call_timeout = absl::Seconds(3);  // Each call to the XXL executor.
  // A run with a timeout is killed and reported TIMED_OUT by the gateway this long after its
  // deadline, unless the XXL executor's own timeout callback (502) came first.
  absl::Duration timeout_grace = absl::Seconds(2);
  // How far before its send time a run's logDateTime may lie (a per-run secret; it also
  // names the executor's log folder by its date, so it stays within minutes).
  absl::Duration log_date_spread = absl::Minutes(10);
};

// The runs of one XXL executor: the jobwheel ExecutorService semantics on top of XXL's
// per-job /run and /kill. Block strategies are kept here per job (the XXL executor is sent a
// run only when no other run of that job runs there), so SERIAL_EXECUTION queues, kills of
// queued runs, DISCARD_LATER and COVER_EARLY are exact. Every run id is recorded in the
// RunLedger before it is sent, so it is sent at most once. Results (callbacks, and the
// gateway's own kills and timeouts) go to the dispatchers with the run's result key.
// `async` runs the sending of the next queued run off the caller's thread. The run path is in
// identity_runs.cc, the result path (callbacks, reports, Tick, Abandon) in identity_results.cc.
// Thread-safe.
class IdentityRuns {
 public:
  using Async = std::function<void(std::function<void()>)>;

  IdentityRuns(IdentityInfo info, IdentityRunsOptions options, RunLedger& ledger, XxlClient& xxl,
               ResultSink& results, GatewayMetrics& metrics, Clock& clock, Async async);

  // Rebuilds the lanes from the ledger (runs of an earlier process).
  void Restore();

  // Run: REJECTED (with the reason) for a run of another app or instance, a job id XXL cannot
  // carry, a glue type it may not run; QUEUED behind a run of the same job; DISCARDED by
  // DISCARD_LATER; else sent to /run. DEADLINE_EXCEEDED when /run was sent but not answered.
  absl::StatusOr<jobwheel::v1::RunResponse> Submit(const jobwheel::v1::RunRequest& req);
  jobwheel::v1::KillResponse Kill(int64_t run_id, const std::string& reason);
  struct Load {
    int running = 0;
    int queued = 0;
  };
  Load JobLoad(int64_t job_id) const;
  Load TotalLoad() const;
  std::vector<int64_t> RunningJobIds() const;
  absl::StatusOr<jobwheel::v1::LogResponse> Log(const jobwheel::v1::LogRequest& req);
  jobwheel::v1::GetRunsResponse GetRuns(const jobwheel::v1::GetRunsRequest& req);

  // Callback items of runs of this identity, reported to a dispatcher together. OK when the
  // XXL executor may forget them (recorded by a dispatcher, or results of runs already
  // settled); UNAVAILABLE when a dispatcher has not recorded one yet (the executor keeps the
  // batch and retries). PERMISSION_DENIED (the others still recorded) for an item of a run
  // not sent to this executor, or whose logDateTim is not the one its /run carried: that
  // value, the send time less a random part of `log_date_spread`, is known only to the
  // executor the run was sent to, so another executor on the same host with the same token
  // cannot settle the run by guessing its logId. `refused` (may be null) counts those items.
  absl::Status OnCallbacks(const std::vector<HandleCallbackParam>& items, int* refused);
  absl::Status OnCallback(const HandleCallbackParam& item) { return OnCallbacks({item}, nullptr); }
  // Deadlines passed and results not yet acknowledged. Called every ~200 ms.
  void Tick();
  // The XXL executor is gone: its runs in flight end here as LOST without a report (the
  // registry's offline decision makes them LOST in jobwheel) and its queues are dropped.
  void Abandon(const std::string& why);

  const IdentityInfo& info() const { return info_; }

 private:
  struct Lane {
    int64_t running = 0;
    std::deque<int64_t> queue;
  };
  // Marks `record` ended with a result not yet reported; frees its lane. Requires mu_.
  void EndLocked(RunRecord& record, int status, int code, const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends each queued run of `job_id` in turn until one is running or none is left.
  void StartNext(int64_t job_id);
  // POST /run of a record already RUNNING in the ledger; OK, or why it did not start.
  absl::Status SendRun(const RunRecord& record, jobwheel::v1::RunResponse* response);
  // Reports ended, unreported records (by id) of this identity; OK when each is settled.
  absl::Status Report(const std::vector<int64_t>& run_ids);
  void KillOnXxl(int64_t job_id);
  int64_t NowMs() const;

  const IdentityInfo info_;
  const IdentityRunsOptions options_;
  RunLedger& ledger_;
  XxlClient& xxl_;
  ResultSink& results_;
  GatewayMetrics& metrics_;
  Clock& clock_;
  const Async async_;

  mutable absl::Mutex mu_;  // Lanes and the state changes of this identity's ledger records.
  absl::flat_hash_map<int64_t, Lane> lanes_ ABSL_GUARDED_BY(mu_);
  // Runs of this identity not settled yet: queued, running, or ended and not reported. What
  // Tick and Abandon look at (not the whole ledger, which keeps --retention of settled runs).
  absl::flat_hash_set<int64_t> open_ ABSL_GUARDED_BY(mu_);
  absl::BitGen bitgen_ ABSL_GUARDED_BY(mu_);  // The logDateTime secrets.
  int64_t retry_reports_at_ms_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_IDENTITY_RUNS_H_
