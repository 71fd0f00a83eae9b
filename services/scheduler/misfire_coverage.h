#ifndef JOBWHEEL_SERVICES_SCHEDULER_MISFIRE_COVERAGE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_MISFIRE_COVERAGE_H_

#include <atomic>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/scheduler/fire_plan.h"

namespace jobwheel::scheduler {

// The FIRE_ONCE_NOW coverage ledger of one leader's term: per job that fired once for an outage
// this term, up to which scheduled time its late fires were covered by that one fire, so that
// two plans (a takeover load's pages, a claim, a settle of held fires) never both fire the job
// once for the same outage. Late fires are judged one plan at a time: Plan() runs its function
// under the ledger's lock, which the caller may hold across the store call that makes the plan
// (taken before FireEngine's own lock). A new term (NewTerm, from OnElected/OnDeposed) empties
// the ledger at the next plan: NewTerm only counts, since it may run on a thread that is inside
// a store call under the ledger's lock (a fenced transaction finding leadership lost).
// Thread-safe.
class MisfireCoverage {
 public:
  // What a plan reads and records while it holds the ledger.
  class Ledger {
   public:
    explicit Ledger(absl::Duration threshold) : threshold_(threshold) {}

    // Per FIRE_ONCE_NOW job that fired once this term: its late fires scheduled up to this
    // time were covered by that fire (PlanLateFires, PlanClaim).
    const absl::flat_hash_map<int64_t, absl::Time>& fired_once_through() const { return through_; }
    // `job_id` fired once (or has its fire-once on its way) for what was late at `now`: it is
    // covered up to now - threshold.
    void Cover(int64_t job_id, absl::Time now);
    // After a committed late-fire plan made at `now`: its fired-once jobs are covered.
    void RecordFiredOnce(const LatePlan& plan, absl::Time now);
    // After a committed claim made at `now`: its MISFIRE fires' jobs are covered.
    void RecordClaim(const ClaimPlan& plan, absl::Time now);
    void Clear() { through_.clear(); }

   private:
    const absl::Duration threshold_;
    absl::flat_hash_map<int64_t, absl::Time> through_;
  };

  explicit MisfireCoverage(absl::Duration misfire_threshold) : ledger_(misfire_threshold) {}

  // A term started (elected or deposed): the ledger is emptied before the next plan.
  void NewTerm() { terms_.fetch_add(1); }

  // Runs `plan(Ledger&)` holding the ledger (one plan at a time) and returns what it returns.
  template <typename PlanFn>
  decltype(auto) Plan(PlanFn&& plan) {
    absl::MutexLock lock(&mu_);
    StartTermLocked();
    return std::forward<PlanFn>(plan)(ledger_);
  }

 private:
  void StartTermLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  Ledger ledger_ ABSL_GUARDED_BY(mu_);
  // Terms started, and the term the ledger belongs to.
  std::atomic<int64_t> terms_{0};
  int64_t term_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_MISFIRE_COVERAGE_H_
