#include "sdk/internal/run_threads.h"

#include <pthread.h>

#include <algorithm>
#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace jobwheel::sdk {

struct RunThreads::Thread {
  std::thread thread;
};

// Everything the threads touch: shared with them, so a detached thread outlives the pool
// safely (it checks `alive` before anything else).
struct RunThreads::Pool {
  Pool(Clock& clock, RunThreadsOptions options, Work work)
      : clock(clock), options(options), work(std::move(work)) {}

  Clock& clock;  // Used only while `alive`.
  const RunThreadsOptions options;
  const Work work;

  absl::Mutex mu;
  bool alive ABSL_GUARDED_BY(mu) = true;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::deque<std::shared_ptr<Lane>> ready ABSL_GUARDED_BY(mu);
  // Threads alive (started, not exited).
  std::vector<std::shared_ptr<Thread>> threads ABSL_GUARDED_BY(mu);
  size_t idle ABSL_GUARDED_BY(mu) = 0;
  // Idle threads asked to look at `ready` (each that stops waiting takes one).
  size_t signals ABSL_GUARDED_BY(mu) = 0;
  // Threads sent to the ready lanes (an idle one signalled, or a new one) that have not
  // looked at them yet: 0 or 1. See WakeOrStart.
  size_t wakeups ABSL_GUARDED_BY(mu) = 0;
  // Threads that exited, joined by the next thread to exit or by Shutdown.
  std::vector<std::thread> exited ABSL_GUARDED_BY(mu);
};

RunThreads::RunThreads(Clock& clock, RunThreadsOptions options, Work work)
    : pool_(std::make_shared<Pool>(clock, options, std::move(work))) {}

RunThreads::~RunThreads() { Shutdown(absl::InfinitePast()); }

void RunThreads::Schedule(std::shared_ptr<Lane> lane) {
  absl::MutexLock lock(&pool_->mu);
  pool_->ready.push_back(std::move(lane));
  WakeOrStart(pool_);
}

void RunThreads::WakeOrStart(const std::shared_ptr<Pool>& pool) {
  Pool& p = *pool;
  if (p.wakeups > 0) return;
  if (p.idle > 0) {
    ++p.wakeups;
    ++p.signals;
    return;
  }
  // Every thread is busy (its handler may block for long): one more, up to the limit.
  if (p.threads.size() < std::max<size_t>(1, p.options.max_threads)) {
    ++p.wakeups;
    auto t = std::make_shared<Thread>();
    t->thread = std::thread(&RunThreads::Loop, pool, t);
    p.threads.push_back(std::move(t));
  }
}

size_t RunThreads::Threads() const {
  absl::MutexLock lock(&pool_->mu);
  return pool_->threads.size();
}

void RunThreads::Loop(std::shared_ptr<Pool> pool, std::shared_ptr<Thread> self) {
  pthread_setname_np(pthread_self(), "jobwheel-run");
  Pool& p = *pool;
  p.mu.Lock();
  if (!p.alive) {
    p.mu.Unlock();
    return;
  }
  absl::Time idle_deadline = p.clock.Now() + p.options.idle_timeout;
  if (p.wakeups > 0) --p.wakeups;  // Started for the ready lanes: here now.
  auto woken = [&p]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(p.mu) { return p.signals > 0 || p.stopping; };
  while (true) {
    if (p.ready.empty()) {
      if (p.stopping || p.clock.Now() >= idle_deadline) break;
      ++p.idle;
      p.clock.AwaitWithDeadline(&p.mu, absl::Condition(&woken), idle_deadline);
      --p.idle;
      if (p.signals > 0) --p.signals;
      if (p.wakeups > 0) --p.wakeups;  // Whatever woke this thread, it looks at `ready` now.
      continue;
    }
    std::shared_ptr<Lane> lane = std::move(p.ready.front());
    p.ready.pop_front();
    if (!p.ready.empty()) WakeOrStart(pool);  // Pass the rest on.
    p.mu.Unlock();
    p.work(std::move(lane));
    p.mu.Lock();
    if (!p.alive) {
      // Detached at Shutdown while its handler ignored cancellation.
      p.mu.Unlock();
      return;
    }
    idle_deadline = p.clock.Now() + p.options.idle_timeout;
  }
  // Exits: joins the threads that exited before (so at most one exited thread is not joined)
  // and leaves its own to the next.
  std::vector<std::thread> to_join = std::move(p.exited);
  p.exited.clear();
  auto it = std::find(p.threads.begin(), p.threads.end(), self);
  if (it != p.threads.end()) p.threads.erase(it);
  p.exited.push_back(std::move(self->thread));
  p.mu.Unlock();
  for (std::thread& t : to_join) t.join();
}

size_t RunThreads::Shutdown(absl::Time deadline) {
  Pool& p = *pool_;
  std::vector<std::thread> joinable;
  std::vector<std::thread> stuck;
  {
    absl::MutexLock lock(&p.mu);
    if (!p.alive) return 0;
    p.stopping = true;
    auto all_exited = [&p]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(p.mu) { return p.threads.empty(); };
    p.clock.AwaitWithDeadline(&p.mu, absl::Condition(&all_exited), deadline);
    for (auto& t : p.threads) stuck.push_back(std::move(t->thread));
    p.threads.clear();
    joinable = std::move(p.exited);
    p.exited.clear();
    p.ready.clear();
    p.alive = false;
  }
  for (std::thread& t : joinable) t.join();
  for (std::thread& t : stuck) t.detach();
  return stuck.size();
}

}  // namespace jobwheel::sdk
