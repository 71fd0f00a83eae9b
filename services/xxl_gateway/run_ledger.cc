#include "services/xxl_gateway/run_ledger.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace jobwheel::xxl {

RunLedger::RunLedger(StateDir& state)
    : journal_(state.dir().empty() ? "" : state.dir() + "/runs.journal") {}

absl::Status RunLedger::Load() {
  auto runs = journal_.Open();
  if (!runs.ok()) return runs.status();
  absl::MutexLock lock(&mu_);
  for (RunRecord& r : *runs) {
    Entry& e = runs_[r.run_id()];
    e.record = std::move(r);
    e.version = e.written = 1;
    e.seq = 0;  // Synced: read from the journal.
  }
  return absl::OkStatus();
}

std::optional<RunRecord> RunLedger::Get(int64_t run_id) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  return it->second.record;
}

absl::Status RunLedger::Put(const RunRecord& record, Durability durability) {
  Stage(record);
  return Persist(record.run_id(), durability);
}

void RunLedger::Stage(const RunRecord& record) {
  absl::MutexLock lock(&mu_);
  Entry& e = runs_[record.run_id()];
  e.record = record;
  ++e.version;
}

absl::Status RunLedger::Persist(int64_t run_id, Durability durability) {
  uint64_t seq = 0;
  {
    absl::MutexLock writer(&write_mu_[static_cast<uint64_t>(run_id) % kWriteStripes]);
    RunRecord record;
    uint64_t version = 0;
    {
      absl::MutexLock lock(&mu_);
      auto it = runs_.find(run_id);
      if (it == runs_.end()) return absl::OkStatus();  // Pruned.
      const Entry& e = it->second;
      seq = e.seq;
      if (e.written != e.version) {
        record = e.record;
        version = e.version;
      }
    }
    if (version != 0) {
      absl::StatusOr<uint64_t> appended = journal_.Append(record);
      if (!appended.ok()) {
        spdlog::error("run {}: {}", run_id, appended.status().ToString());
        return appended.status();
      }
      seq = *appended;
      absl::MutexLock lock(&mu_);
      auto it = runs_.find(run_id);
      if (it != runs_.end()) {
        it->second.written = version;
        it->second.seq = seq;
      }
    }
  }
  // Outside the writer lock: the runs persisted meanwhile join this sync or the next one.
  if (durability != Durability::kSynced) return absl::OkStatus();
  absl::Status s = journal_.SyncTo(seq);
  if (!s.ok()) spdlog::error("run {}: {}", run_id, s.ToString());
  return s;
}

std::vector<RunRecord> RunLedger::OfIdentity(const std::string& identity) const {
  std::vector<RunRecord> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, e] : runs_) {
    if (e.record.identity() == identity) out.push_back(e.record);
  }
  return out;
}

int RunLedger::Prune(absl::Time before) {
  const int64_t before_ms = absl::ToUnixMillis(before);
  std::vector<int64_t> gone;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = runs_.begin(); it != runs_.end();) {
      const RunRecord& r = it->second.record;
      const bool done = r.state() == RUN_STATE_FENCED || r.state() == RUN_STATE_REFUSED ||
                        (r.state() == RUN_STATE_ENDED && r.reported());
      const int64_t at = r.end_ms() > 0 ? r.end_ms() : r.accept_ms();
      if (done && at < before_ms) {
        gone.push_back(it->first);
        runs_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (int64_t id : gone) {
    absl::MutexLock writer(&write_mu_[static_cast<uint64_t>(id) % kWriteStripes]);
    {
      absl::MutexLock lock(&mu_);
      if (runs_.contains(id)) continue;  // Known again since.
    }
    journal_.Forget(id).IgnoreError();
  }
  // Compacted when the live records would take under a quarter of the journal.
  size_t live_bytes = 0;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, e] : runs_) live_bytes += e.record.ByteSizeLong() + 8;
  }
  const uint64_t bytes = journal_.bytes();
  if (bytes > (1u << 20) && bytes > 4 * live_bytes) {
    absl::Status s = journal_.Compact([this] {
      std::vector<RunRecord> live;
      absl::MutexLock lock(&mu_);
      live.reserve(runs_.size());
      for (const auto& [id, e] : runs_) live.push_back(e.record);
      return live;
    });
    if (!s.ok()) spdlog::warn("{}", s.ToString());
  }
  return static_cast<int>(gone.size());
}

size_t RunLedger::size() const {
  absl::MutexLock lock(&mu_);
  return runs_.size();
}

}  // namespace jobwheel::xxl
