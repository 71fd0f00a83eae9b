#ifndef JOBWHEEL_SDK_INTERNAL_RUN_LEDGER_H_
#define JOBWHEEL_SDK_INTERNAL_RUN_LEDGER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/base/lru_map.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "jobwheel/v1/executor.pb.h"
#include "sdk/internal/result_sink.h"

namespace jobwheel::sdk {

// What an executor remembers of run ids it no longer holds (the RunManager holds queued and
// running runs): runs that ended here (with their status once their result is made), runs it
// refused (DISCARDED or REJECTED: a repeated call gets the same answer, the run never runs),
// and run ids fenced by GetRuns (refused for good). Both memories are bounded (least recently
// used dropped): `recent_runs` ended or refused runs, `fenced_runs` fences, so a flood of
// short runs never pushes a fence out before the late trigger it guards against. Fences are
// not kept across a restart: a trigger sent before the restart cannot arrive after it (its
// connection died with the process). Thread-safe.
class RunLedger {
 public:
  enum class Kind { kEnded, kRefused, kFenced };
  struct Entry {
    Kind kind = Kind::kEnded;
    // kEnded: the terminal status (UNSPECIFIED while its result is being made, or for a run
    // known only by its log from an earlier process); kRefused: DISCARDED or FAILED.
    jobwheel::v1::RunStatus status = jobwheel::v1::RUN_STATUS_UNSPECIFIED;
    // kRefused: the answer it was given (DISCARDED or REJECTED).
    jobwheel::v1::RunDisposition disposition = jobwheel::v1::RUN_DISPOSITION_UNSPECIFIED;
    std::string message;
  };

  RunLedger(size_t recent_runs, size_t fenced_runs);
  RunLedger(const RunLedger&) = delete;
  RunLedger& operator=(const RunLedger&) = delete;

  // The run ended here. A known status is kept over UNSPECIFIED; a refused or fenced entry is
  // never turned into an ended one.
  void Ended(int64_t run_id, jobwheel::v1::RunStatus status, const std::string& message);
  // The run was refused with `disposition` (DISCARDED or REJECTED) and never ran.
  void Refused(int64_t run_id, jobwheel::v1::RunDisposition disposition,
               const std::string& message);
  // The run id is refused for good (GetRuns with fence).
  void Fence(int64_t run_id);
  // What is remembered of the run id, if anything.
  std::optional<Entry> Find(int64_t run_id);
  // The largest run id this ledger has forgotten to make room (0 when none): a run of this
  // process up to it may have ended here without being remembered (its run log tells).
  int64_t largest_forgotten() const;

  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  // Puts into recent_, noting the id it evicts in largest_forgotten_.
  void Remember(int64_t run_id, Entry e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  LruMap<int64_t, Entry> recent_ ABSL_GUARDED_BY(mu_);
  int64_t largest_forgotten_ ABSL_GUARDED_BY(mu_) = 0;
  LruMap<int64_t, bool> fenced_ ABSL_GUARDED_BY(mu_);
};

// A ResultSink that notes each result's status in a RunLedger before passing it on, so an
// ended run is answered with its status (GetRuns) even after the RunManager forgot it.
class LedgerSink : public ResultSink {
 public:
  LedgerSink(RunLedger* ledger, ResultSink* next) : ledger_(ledger), next_(next) {}
  void Submit(const jobwheel::v1::RunResult& result) override;

 private:
  RunLedger* const ledger_;
  ResultSink* const next_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RUN_LEDGER_H_
