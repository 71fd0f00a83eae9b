#ifndef JOBWHEEL_COMMON_TIME_CLOCK_H_
#define JOBWHEEL_COMMON_TIME_CLOCK_H_

#include <map>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace jobwheel {

// Time source injected into core logic so tests control it; the shape of Abseil's Clock. Code
// that waits for time to pass waits through the clock (SleepUntil, AwaitWithDeadline), so a
// simulated clock can move it on without real sleeps.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Returns once Now() >= deadline.
  virtual void SleepUntil(absl::Time deadline) = 0;
  void SleepFor(absl::Duration d) { SleepUntil(Now() + d); }
  // Like absl::Mutex::AwaitWithDeadline on this clock's time: `mu` is held on entry and on
  // return; returns cond's value, true as soon as it holds, false once `deadline` has passed.
  virtual bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                                 absl::Time deadline) = 0;
};

// The wall clock.
class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  void SleepUntil(absl::Time deadline) override { absl::SleepFor(deadline - absl::Now()); }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) override {
    return mu->AwaitWithDeadline(cond, deadline);
  }
  static RealClock& Get() {
    static RealClock* clock = new RealClock();
    return *clock;
  }
};

// A clock that moves only when told (Advance, Set), waking the sleepers and waiters whose
// deadline it passes. Thread-safe. Tests that need a thread to be waiting before they move time
// use AwaitWaiters instead of sleeping.
class SimulatedClock : public Clock {
 public:
  explicit SimulatedClock(absl::Time start = absl::FromUnixSeconds(1700000000)) : now_(start) {}

  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) { Set(Now() + d); }
  void Set(absl::Time t);

  void SleepUntil(absl::Time deadline) override;
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) override;

  // How many threads wait for a time still in the future.
  int Waiters() const;
  // Blocks (in real time) until at least `n` threads wait for a future time.
  void AwaitWaiters(int n) const;

 private:
  // One waiting thread. `fired` is guarded by *mu (the waiter's own mutex), so setting it
  // under that mutex makes the waiter re-evaluate its condition.
  struct Waiter {
    absl::Mutex* mu = nullptr;
    bool fired = false;
  };

  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  std::multimap<absl::Time, std::shared_ptr<Waiter>> waiters_ ABSL_GUARDED_BY(mu_);
};

// The name older tests use.
using FakeClock = SimulatedClock;

inline void SimulatedClock::Set(absl::Time t) {
  std::multimap<absl::Time, std::shared_ptr<Waiter>> due;
  {
    absl::MutexLock lock(&mu_);
    now_ = t;
    auto end = waiters_.upper_bound(now_);
    due.insert(waiters_.begin(), end);
    waiters_.erase(waiters_.begin(), end);
  }
  for (auto& [deadline, w] : due) {
    absl::MutexLock lock(w->mu);
    w->fired = true;
  }
}

inline void SimulatedClock::SleepUntil(absl::Time deadline) {
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  static constexpr bool kNever = false;
  AwaitWithDeadline(&mu, absl::Condition(&kNever), deadline);
}

inline bool SimulatedClock::AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                                              absl::Time deadline) {
  if (cond.Eval()) return true;
  auto w = std::make_shared<Waiter>();
  w->mu = mu;
  {
    absl::MutexLock lock(&mu_);
    if (now_ >= deadline) return false;
    waiters_.emplace(deadline, w);
  }
  auto ready = [&]() { return w->fired || cond.Eval(); };
  mu->Await(absl::Condition(&ready));
  const bool result = cond.Eval();
  if (!w->fired) {
    bool claimed;
    {
      absl::MutexLock lock(&mu_);
      claimed = true;
      for (auto i = waiters_.lower_bound(deadline); i != waiters_.end() && i->first == deadline;
           ++i) {
        if (i->second == w) {
          waiters_.erase(i);
          claimed = false;
          break;
        }
      }
    }
    // Set() took this waiter and will mark it under *mu: wait for that so it never touches a
    // mutex the caller may destroy once we return.
    if (claimed) mu->Await(absl::Condition(&w->fired));
  }
  return result;
}

inline int SimulatedClock::Waiters() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(std::distance(waiters_.upper_bound(now_), waiters_.end()));
}

inline void SimulatedClock::AwaitWaiters(int n) const {
  absl::MutexLock lock(&mu_);
  auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::distance(waiters_.upper_bound(now_), waiters_.end()) >= n;
  };
  mu_.Await(absl::Condition(&enough));
}

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_TIME_CLOCK_H_
