#include "sdk/internal/run_state.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"

namespace jobwheel::sdk {

std::shared_ptr<RunState> RunTable::Find(int64_t run_id) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : it->second;
}

void RunTable::Add(std::shared_ptr<RunState> run) {
  run->phase = RunPhase::kQueued;
  ++queued_;
  const int64_t id = run->run_id();
  runs_[id] = std::move(run);
}

void RunTable::SetPhase(RunState& run, RunPhase phase) {
  if (run.phase == phase) return;
  if (run.phase == RunPhase::kQueued) --queued_;
  if (run.phase == RunPhase::kRunning) --running_;
  run.phase = phase;
  if (phase == RunPhase::kQueued) ++queued_;
  if (phase == RunPhase::kRunning) ++running_;
}

void RunTable::Forget(RunState& run) {
  SetPhase(run, RunPhase::kDone);
  const int64_t id = run.run_id();
  auto it = runs_.find(id);
  if (it != runs_.end() && it->second.get() == &run) runs_.erase(it);
}

RunTable::Counts RunTable::JobCounts(int64_t job_id) const {
  Counts counts;
  for (const auto& [id, run] : runs_) {
    if (run->request.job_id() != job_id) continue;
    if (run->phase == RunPhase::kRunning) ++counts.running;
    if (run->phase == RunPhase::kQueued) ++counts.queued;
  }
  return counts;
}

std::vector<int64_t> RunTable::RunningJobs() const {
  absl::flat_hash_set<int64_t> jobs;
  for (const auto& [id, run] : runs_) {
    if (run->phase == RunPhase::kRunning) jobs.insert(run->request.job_id());
  }
  std::vector<int64_t> out(jobs.begin(), jobs.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::shared_ptr<RunState>> RunTable::Unreported() const {
  std::vector<std::shared_ptr<RunState>> out;
  for (const auto& [id, run] : runs_) {
    if (!run->reported) out.push_back(run);
  }
  return out;
}

std::vector<std::shared_ptr<RunState>> RunTable::Running() const {
  std::vector<std::shared_ptr<RunState>> out;
  for (const auto& [id, run] : runs_) {
    if (run->phase == RunPhase::kRunning) out.push_back(run);
  }
  return out;
}

}  // namespace jobwheel::sdk
