#ifndef JOBWHEEL_SDK_INTERNAL_RUN_THREADS_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_THREADS_H_

#include <cstddef>
#include <functional>
#include <memory>

#include "absl/time/time.h"
#include "common/time/clock.h"

namespace jobwheel::sdk {

struct Lane;

struct RunThreadsOptions {
  // A thread exits after this long without work (measured on the injected Clock).
  absl::Duration idle_timeout = absl::Seconds(30);
  // At most this many threads (lanes scheduled beyond that wait for a thread to be free).
  size_t max_threads = 1024;
};

// The threads that run handlers, shared by all jobs: Schedule() hands over a lane with a run
// to start, and a thread calls work(lane), which works through the lane's runs. A thread is
// started when a lane is scheduled and no thread is idle, so the thread count follows the runs
// executing at once, not the number of jobs. One thread at a time is sent to the scheduled
// lanes; it takes one and, if more are waiting, sends the next: a batch of short runs is then
// often done by one or two threads instead of waking one per run (a wake-up costs more than a
// short handler), and runs that block still each get a thread, one wake-up or thread start
// apart. Idle threads wait through the injected Clock and exit after idle_timeout.
//
// Thread-safe. A thread still in work() at Shutdown is detached: `work` must then touch only
// what it holds (the pool's own state is shared with its threads, so they never touch a
// destroyed pool).
class RunThreads {
 public:
  using Work = std::function<void(std::shared_ptr<Lane>)>;

  RunThreads(Clock& clock, RunThreadsOptions options, Work work);
  ~RunThreads();  // Shutdown(now).
  RunThreads(const RunThreads&) = delete;
  RunThreads& operator=(const RunThreads&) = delete;

  // Has a thread call work(lane): wakes an idle thread or starts one (up to max_threads).
  void Schedule(std::shared_ptr<Lane> lane);

  // Threads alive (idle ones included, until their idle timeout).
  size_t Threads() const;

  // Idle threads exit; waits until `deadline` for the busy ones to finish their work, then
  // detaches those still in work(). Returns how many were detached. Idempotent.
  size_t Shutdown(absl::Time deadline);

 private:
  struct Pool;
  struct Thread;
  static void Loop(std::shared_ptr<Pool> pool, std::shared_ptr<Thread> self);
  static void WakeOrStart(const std::shared_ptr<Pool>& pool);

  const std::shared_ptr<Pool> pool_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_THREADS_H_
