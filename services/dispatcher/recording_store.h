#ifndef JOBWHEEL_SERVICES_DISPATCHER_RECORDING_STORE_H_
#define JOBWHEEL_SERVICES_DISPATCHER_RECORDING_STORE_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "services/dispatcher/dispatch_store.h"
#include "services/dispatcher/result_key.h"

namespace jobwheel::dispatcher::testing {

// An in-memory DispatchStore that records every write, for tests of the dispatcher's
// parts without PostgreSQL. Runs get ids from 100 up, and result keys as PgDispatchStore gives
// them (key(run_id) tells a run's key): a result with a wrong key is kBadKey, one for a run
// decided with another status kLate (once), one of an app outside the reporter's scope
// kForbidden, and only runs still PENDING are rerouted, as in PgDispatchStore
// (dispatch_store_contract_test runs the same cases on both).
class RecordingStore : public DispatchStore {
 public:
  struct ResultWrite {
    std::vector<int64_t> run_ids;
    std::vector<TriggerOutcome> answers;
  };

  absl::StatusOr<std::vector<FireResult>> DispatchFires(const std::vector<v1::Fire>& fires,
                                                        absl::Time,
                                                        const FirePlanner& plan) override {
    std::vector<FireResult> out;
    for (const v1::Fire& f : fires) {
      FirePlan p = plan(f);
      FireResult r;
      r.fire_id = f.fire_id();
      r.status = p.status;
      absl::MutexLock lock(&mu_);
      for (PlannedRun& run : p.runs) {
        if (run.result_key.empty()) run.result_key = NewResultKey();
        CreatedRun c{next_run_id_++, std::move(run)};
        runs_.insert(c.run_id);
        apps_[c.run_id] = f.job().app();
        keys_[c.run_id] = c.planned.result_key;
        if (c.planned.status != v1::RUN_STATUS_PENDING) finished_.insert(c.run_id);
        r.run_ids.push_back(c.run_id);
        r.created.push_back(std::move(c));
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  absl::StatusOr<std::vector<int64_t>> RecordTriggerOutcomes(
      const std::vector<TriggerOutcome>& outcomes) override {
    absl::MutexLock lock(&mu_);
    std::vector<int64_t> done;
    for (const TriggerOutcome& o : outcomes) {
      trigger_writes_.push_back(o);
      if (o.status == v1::RUN_STATUS_RUNNING && !finished_.contains(o.run_id)) {
        started_.insert(o.run_id);
      }
      if (o.status != v1::RUN_STATUS_RUNNING && finished_.insert(o.run_id).second) {
        status_[o.run_id] = o.status;
        done.push_back(o.run_id);
      }
    }
    return done;
  }

  // Moves only runs still PENDING (created here, no RUNNING answer, not finished).
  absl::StatusOr<std::vector<int64_t>> RerouteRuns(const std::vector<Reroute>& r) override {
    absl::MutexLock lock(&mu_);
    std::vector<int64_t> ids;
    for (const Reroute& x : r) {
      if (runs_.contains(x.run_id) && !started_.contains(x.run_id) &&
          !finished_.contains(x.run_id)) {
        ids.push_back(x.run_id);
      }
    }
    return ids;
  }
  absl::StatusOr<std::vector<ResultRecord>> RecordResults(
      const std::vector<v1::RunResult>& results, absl::Time, const AppScope& scope,
      const std::vector<TriggerOutcome>& answers) override {
    ResultWrite write{{}, answers};
    for (const v1::RunResult& r : results) write.run_ids.push_back(r.run_id());
    absl::Notification* gate;
    {
      absl::MutexLock lock(&mu_);
      result_writes_.push_back(write);
      gate = gate_;
    }
    if (gate != nullptr) {
      entered_.Notify();
      gate->WaitForNotification();
    }
    absl::MutexLock lock(&mu_);
    if (fail_results_) return absl::UnavailableError("database down");
    std::vector<ResultRecord> out;
    for (const v1::RunResult& r : results) {
      ResultDisposition d;
      auto key = keys_.find(r.run_id());
      if (!runs_.contains(r.run_id())) {
        d = ResultDisposition::kUnknown;
      } else if (scope.has_value() &&
                 std::find(scope->begin(), scope->end(), apps_[r.run_id()]) == scope->end()) {
        d = ResultDisposition::kForbidden;
      } else if (key != keys_.end() && key->second != r.result_key()) {
        d = ResultDisposition::kBadKey;
      } else if (finished_.insert(r.run_id()).second) {
        d = ResultDisposition::kRecorded;
        status_[r.run_id()] = r.status();
      } else {
        auto decided = status_.find(r.run_id());
        const bool late = decided != status_.end() && decided->second != r.status() &&
                          late_.insert(r.run_id()).second;
        d = late ? ResultDisposition::kLate : ResultDisposition::kDuplicate;
      }
      out.push_back(ResultRecord{r.run_id(), d, r.status()});
    }
    return out;
  }

  // The result key the store gave `run_id` (empty for runs it did not create).
  std::string key(int64_t run_id) const {
    absl::MutexLock lock(&mu_);
    auto it = keys_.find(run_id);
    return it == keys_.end() ? std::string() : it->second;
  }
  // Whether a late result was kept for `run_id`.
  bool late(int64_t run_id) const {
    absl::MutexLock lock(&mu_);
    return late_.contains(run_id);
  }

  void FailResults(bool fail) {
    absl::MutexLock lock(&mu_);
    fail_results_ = fail;
  }
  // The run is decided (as `status`, when given: a differing result is then late).
  void Finish(int64_t run_id, v1::RunStatus status = v1::RUN_STATUS_UNSPECIFIED) {
    absl::MutexLock lock(&mu_);
    finished_.insert(run_id);
    if (status != v1::RUN_STATUS_UNSPECIFIED) status_[run_id] = status;
  }
  // The next RecordResults calls stop inside until `gate` is notified; entered() then fires.
  void HoldResultsAt(absl::Notification* gate) {
    absl::MutexLock lock(&mu_);
    gate_ = gate;
  }
  absl::Notification& entered() { return entered_; }

  std::vector<TriggerOutcome> trigger_writes() const {
    absl::MutexLock lock(&mu_);
    return trigger_writes_;
  }
  bool TriggerWritten(int64_t run_id) const {
    absl::MutexLock lock(&mu_);
    for (const TriggerOutcome& o : trigger_writes_) {
      if (o.run_id == run_id) return true;
    }
    return false;
  }
  std::vector<ResultWrite> result_writes() const {
    absl::MutexLock lock(&mu_);
    return result_writes_;
  }

 private:
  mutable absl::Mutex mu_;
  int64_t next_run_id_ ABSL_GUARDED_BY(mu_) = 100;
  absl::flat_hash_set<int64_t> runs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> finished_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> started_ ABSL_GUARDED_BY(mu_);  // Answered RUNNING.
  absl::flat_hash_map<int64_t, std::string> apps_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, std::string> keys_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, v1::RunStatus> status_ ABSL_GUARDED_BY(mu_);  // Decided ones.
  absl::flat_hash_set<int64_t> late_ ABSL_GUARDED_BY(mu_);
  std::vector<TriggerOutcome> trigger_writes_ ABSL_GUARDED_BY(mu_);
  std::vector<ResultWrite> result_writes_ ABSL_GUARDED_BY(mu_);
  bool fail_results_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification* gate_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Notification entered_;
};

}  // namespace jobwheel::dispatcher::testing

#endif  // JOBWHEEL_SERVICES_DISPATCHER_RECORDING_STORE_H_
