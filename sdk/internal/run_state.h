#ifndef JOBWHEEL_SDK_INTERNAL_RUN_STATE_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_STATE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "jobwheel/cancellation.h"
#include "jobwheel/v1/executor.pb.h"
#include "sdk/internal/run_log_writer.h"

namespace jobwheel::sdk {

struct Lane;

enum class RunPhase { kQueued, kRunning, kDone };

// One accepted run. Its fields are guarded by the RunManager's mutex, except `request`, `token`
// and `log`, which are set before the run is shared and are thread-safe or read-only.
struct RunState {
  jobwheel::v1::RunRequest request;
  std::shared_ptr<CancellationToken> token = std::make_shared<CancellationToken>();
  // Null when the log could not be made. Closed (written) when the run ends.
  std::shared_ptr<RunLogFile> log;
  RunPhase phase = RunPhase::kQueued;
  bool reported = false;
  Lane* lane = nullptr;  // Whose queue or current slot holds the run.
  absl::Time accepted;
  absl::Time started = absl::InfinitePast();
  absl::Time deadline = absl::InfiniteFuture();
  absl::Time cancelled_at = absl::InfiniteFuture();

  int64_t run_id() const { return request.run_id(); }
  void Log(absl::string_view text) const {
    if (log != nullptr) log->Append(text);
  }
};

// The runs queued or running here by id, and how many of each (what is known of run ids that
// ended is the RunLedger's). Not thread-safe: the RunManager's mutex guards it.
class RunTable {
 public:
  // The queued or running run, or null.
  std::shared_ptr<RunState> Find(int64_t run_id) const;
  bool empty() const { return runs_.empty(); }

  // Adds a new (queued) run.
  void Add(std::shared_ptr<RunState> run);
  // Moves a run to `phase`, keeping the counts.
  void SetPhase(RunState& run, RunPhase phase);
  // The run ended: removed.
  void Forget(RunState& run);

  int queued() const { return queued_; }
  int running() const { return running_; }

  struct Counts {
    int running = 0;
    int queued = 0;
  };
  Counts JobCounts(int64_t job_id) const;
  // The jobs with a run running, sorted.
  std::vector<int64_t> RunningJobs() const;
  // The runs not reported yet.
  std::vector<std::shared_ptr<RunState>> Unreported() const;
  // The runs whose handler is still running.
  std::vector<std::shared_ptr<RunState>> Running() const;

 private:
  absl::flat_hash_map<int64_t, std::shared_ptr<RunState>> runs_;
  int queued_ = 0;
  int running_ = 0;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_STATE_H_
