#include "services/registry/in_memory_executor_store.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/model/instance_tag.h"
#include "common/time/proto_time.h"

namespace jobwheel::registry {

absl::Status InMemoryExecutorStore::Check() const {
  if (failing_) return absl::UnavailableError("in-memory store: failing on purpose");
  return absl::OkStatus();
}

void InMemoryExecutorStore::Announce(Change::Kind kind, const std::string& app,
                                     const std::string& address) {
  Change c;
  c.kind = kind;
  c.app = app;
  c.address = address;
  c.committed_at = clock_.Now();
  changes_.push_back(std::move(c));
}

absl::StatusOr<v1::Executor> InMemoryExecutorStore::Register(const v1::Executor& executor,
                                                             const std::string& replica_id,
                                                             const std::string& session_id,
                                                             absl::Duration lease,
                                                             const std::string& instance_id) {
  absl::MutexLock lock(&mu_);
  absl::Status s = Check();
  if (!s.ok()) return s;
  auto existing = rows_.find({executor.app(), executor.address()});
  if (existing != rows_.end() && existing->second.online &&
      existing->second.lease_until >= clock_.Now() &&
      (instance_id.empty() || existing->second.instance_id != instance_id)) {
    return absl::AlreadyExistsError(absl::StrCat(
        "executor ", executor.app(), "/", executor.address(), " is online with another instance"));
  }
  // The same rules as PgExecutorStore::Register: the app must exist, and an address serves
  // one app at a time.
  if (apps_.count(executor.app()) == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("register.app: app ", executor.app(),
                     " does not exist; an admin creates it (AppAdminService/CreateApp)"));
  }
  for (const auto& [key, other] : rows_) {
    if (key.address == executor.address() && key.app != executor.app() && other.online &&
        other.lease_until >= clock_.Now()) {
      return absl::AlreadyExistsError(absl::StrCat("register.address: ", executor.address(),
                                                   " is online for another app (", key.app,
                                                   "); an address serves one app at a time"));
    }
  }
  Row& row = rows_[{executor.app(), executor.address()}];
  row.executor = executor;
  row.executor.set_registry_replica(replica_id);
  row.executor.set_instance(InstanceTag(instance_id));
  *row.executor.mutable_register_time() = ToProto(clock_.Now());
  *row.executor.mutable_last_beat_time() = ToProto(clock_.Now());
  row.replica_id = replica_id;
  row.session_id = session_id;
  row.instance_id = instance_id;
  row.online = true;
  row.lease_until = clock_.Now() + lease;
  Announce(Change::Kind::kExecutor, executor.app(), executor.address());
  return row.executor;
}

absl::StatusOr<bool> InMemoryExecutorStore::MarkOffline(const SessionRef& session) {
  absl::MutexLock lock(&mu_);
  absl::Status s = Check();
  if (!s.ok()) return s;
  auto it = rows_.find(session.key);
  if (it == rows_.end() || !it->second.online || it->second.session_id != session.session_id) {
    return false;
  }
  it->second.online = false;
  Announce(Change::Kind::kExecutor, session.key.app, session.key.address);
  return true;
}

absl::StatusOr<std::vector<LostSession>> InMemoryExecutorStore::RenewLeases(
    const std::string& replica_id, const std::vector<LeaseRenewal>& renewals,
    absl::Duration lease) {
  absl::MutexLock lock(&mu_);
  ++renew_calls_;
  absl::Status s = Check();
  if (!s.ok()) return s;
  std::vector<LostSession> lost;
  for (const LeaseRenewal& r : renewals) {
    auto it = rows_.find(r.session.key);
    if (it != rows_.end() && it->second.online && it->second.session_id == r.session.session_id &&
        it->second.replica_id == replica_id) {
      it->second.lease_until = clock_.Now() + lease;
      *it->second.executor.mutable_last_beat_time() = ToProto(r.last_beat_time);
      it->second.executor.set_running(r.running);
      it->second.executor.set_queued(r.queued);
      continue;
    }
    const bool superseded = it != rows_.end() && it->second.online;
    lost.push_back(
        {r.session.session_id, superseded ? LostReason::kSuperseded : LostReason::kMissing});
  }
  return lost;
}

absl::StatusOr<int> InMemoryExecutorStore::ExpireLeases() {
  absl::MutexLock lock(&mu_);
  absl::Status s = Check();
  if (!s.ok()) return s;
  int n = 0;
  for (auto& [key, row] : rows_) {
    if (row.online && row.lease_until < clock_.Now()) {
      row.online = false;
      ++n;
      Announce(Change::Kind::kExecutor, key.app, key.address);
    }
  }
  return n;
}

absl::StatusOr<std::vector<v1::Executor>> InMemoryExecutorStore::ListOnline() {
  absl::MutexLock lock(&mu_);
  absl::Status s = Check();
  if (!s.ok()) return s;
  std::vector<v1::Executor> out;
  for (const auto& [key, row] : rows_) {
    if (row.online) out.push_back(row.executor);
  }
  return out;
}

absl::StatusOr<std::vector<v1::Executor>> InMemoryExecutorStore::GetOnline(
    const std::vector<ExecutorKey>& keys) {
  absl::MutexLock lock(&mu_);
  absl::Status s = Check();
  if (!s.ok()) return s;
  std::vector<v1::Executor> out;
  for (const ExecutorKey& k : keys) {
    auto it = rows_.find(k);
    if (it != rows_.end() && it->second.online) out.push_back(it->second.executor);
  }
  return out;
}

absl::StatusOr<std::vector<AppConfig>> InMemoryExecutorStore::ListAppConfigs() {
  absl::MutexLock lock(&mu_);
  absl::Status s = Check();
  if (!s.ok()) return s;
  std::vector<AppConfig> out;
  for (const auto& [name, app] : apps_) out.push_back(app);
  return out;
}

absl::StatusOr<std::vector<AppConfig>> InMemoryExecutorStore::GetAppConfigs(
    const std::vector<std::string>& names) {
  absl::MutexLock lock(&mu_);
  absl::Status s = Check();
  if (!s.ok()) return s;
  std::vector<AppConfig> out;
  for (const std::string& n : names) {
    auto it = apps_.find(n);
    if (it != apps_.end()) out.push_back(it->second);
  }
  return out;
}

void InMemoryExecutorStore::SetFailing(bool failing) {
  absl::MutexLock lock(&mu_);
  failing_ = failing;
}

void InMemoryExecutorStore::SetApp(const AppConfig& app) {
  absl::MutexLock lock(&mu_);
  apps_[app.name] = app;
  Announce(Change::Kind::kApp, app.name, "");
}

void InMemoryExecutorStore::DropAllRows() {
  absl::MutexLock lock(&mu_);
  for (const auto& [key, row] : rows_) Announce(Change::Kind::kExecutor, key.app, key.address);
  rows_.clear();
}

absl::optional<InMemoryExecutorStore::Row> InMemoryExecutorStore::GetRow(
    const ExecutorKey& key) const {
  absl::MutexLock lock(&mu_);
  auto it = rows_.find(key);
  if (it == rows_.end()) return absl::nullopt;
  return it->second;
}

int InMemoryExecutorStore::renew_calls() const {
  absl::MutexLock lock(&mu_);
  return renew_calls_;
}

std::vector<Change> InMemoryExecutorStore::TakeChanges() {
  absl::MutexLock lock(&mu_);
  std::vector<Change> out;
  out.swap(changes_);
  return out;
}

absl::Status InMemoryChangeFeed::Connect() {
  store_.TakeChanges();  // A fresh subscription sees only later changes.
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Change>> InMemoryChangeFeed::Wait(absl::Duration /*timeout*/) {
  return store_.TakeChanges();
}

}  // namespace jobwheel::registry
