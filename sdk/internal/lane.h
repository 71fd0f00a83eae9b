#ifndef JOBWHEEL_SDK_INTERNAL_LANE_H_
#define JOBWHEEL_SDK_INTERNAL_LANE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jobwheel/v1/executor.pb.h"
#include "sdk/internal/run_state.h"

namespace jobwheel::sdk {

// A job's lane: its runs in order, at most one of them running. A run thread (RunThreads)
// works through a lane while it has runs. Guarded by the RunManager's mutex.
struct Lane {
  int64_t job_id = 0;
  std::deque<std::shared_ptr<RunState>> queue;
  std::shared_ptr<RunState> current;
  bool ready = false;  // Handed to the run threads: has a run to start and no thread yet.
  bool owned = false;  // A run thread is working through it.

  bool busy() const { return current != nullptr || !queue.empty(); }
  // Takes a queued run off the queue.
  void Unqueue(const std::shared_ptr<RunState>& run);
};

// What a job's block strategy makes of a new run.
struct Admission {
  enum class Kind {
    kStart,    // The job is idle: the run starts.
    kQueue,    // SERIAL_EXECUTION (or unspecified) behind a busy job: the run waits its turn.
    kDiscard,  // DISCARD_LATER while the job is busy: the run is refused.
  };
  Kind kind = Kind::kStart;
  int64_t blocker = 0;  // The run the job is busy with (running, or first queued).
  // COVER_EARLY while the job was busy: the queued runs taken off its queue (never started)
  // and the running one, all to be cancelled "covered by" the new run; the new run starts on
  // a fresh lane (the covered run finishes on the old one).
  std::vector<std::shared_ptr<RunState>> covered_queued;
  std::shared_ptr<RunState> covered_running;
  std::shared_ptr<Lane> lane;  // Where the run goes (kStart, kQueue).
};

// The lanes of the jobs with queued or running runs, and the block strategies
// (SERIAL_EXECUTION queues, DISCARD_LATER refuses while busy, COVER_EARLY takes the job's runs
// off its lane and starts the new one on a fresh lane). Not thread-safe: the RunManager's
// mutex guards it.
class Lanes {
 public:
  // Applies the new run's block strategy for job_id. For kStart and kQueue the caller puts the
  // run on `lane`; it cancels the covered runs.
  Admission Admit(int64_t job_id, jobwheel::v1::BlockStrategy strategy);
  // Drops the job's lane once it is idle (the job's next run gets a new one).
  void DropIfIdle(const std::shared_ptr<Lane>& lane);

 private:
  absl::flat_hash_map<int64_t, std::shared_ptr<Lane>> lanes_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_LANE_H_
