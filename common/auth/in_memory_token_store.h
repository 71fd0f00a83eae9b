#ifndef JOBWHEEL_COMMON_AUTH_IN_MEMORY_TOKEN_STORE_H_
#define JOBWHEEL_COMMON_AUTH_IN_MEMORY_TOKEN_STORE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/auth/token_store.h"

namespace jobwheel {

// TokenStore in memory, for tests. Counts FindActive calls; keeps the audit events of its
// writes (audits()). Thread-safe.
class InMemoryTokenStore : public TokenStore {
 public:
  using TokenStore::Create;
  using TokenStore::Revoke;

  absl::StatusOr<absl::optional<StoredToken>> FindActive(const std::string& hash) override {
    absl::MutexLock lock(&mu_);
    ++lookups_;
    if (!available_) return absl::UnavailableError("token store down");
    for (auto& [id, e] : rows_) {
      if (e.hash == hash && !e.row.revoke_time.has_value()) {
        StoredToken t = ToStoredToken(e.row);
        t.id = id;
        return absl::optional<StoredToken>(std::move(t));
      }
    }
    return absl::optional<StoredToken>();
  }

  absl::StatusOr<TokenRow> Create(const NewToken& token,
                                  const jobwheel::v1::AuditEvent* audit) override {
    absl::MutexLock lock(&mu_);
    for (auto& [id, e] : rows_) {
      if (e.row.name == token.name && !e.row.revoke_time.has_value()) {
        return absl::AlreadyExistsError(absl::StrCat("name: ", token.name, " exists"));
      }
    }
    Entry e;
    e.row.id = ++next_id_;
    e.row.name = token.name;
    e.row.role = token.role;
    e.row.apps = token.apps;
    e.row.create_time = token.create_time;
    e.row.expire_time = token.expire_time;
    e.hash = token.secret_hash;
    rows_[e.row.id] = e;
    if (audit != nullptr) audits_.push_back(TokenAuditEvent(*audit, nullptr, e.row));
    return e.row;
  }

  absl::StatusOr<std::vector<TokenRow>> List(bool include_revoked) override {
    absl::MutexLock lock(&mu_);
    std::vector<TokenRow> out;
    for (auto& [id, e] : rows_) {
      if (include_revoked || !e.row.revoke_time.has_value()) out.push_back(e.row);
    }
    return out;
  }

  absl::StatusOr<TokenRow> Revoke(int64_t id, absl::Time now,
                                  const jobwheel::v1::AuditEvent* audit) override {
    absl::MutexLock lock(&mu_);
    auto it = rows_.find(id);
    if (it == rows_.end()) return absl::NotFoundError(absl::StrCat("token ", id, " not found"));
    if (!it->second.row.revoke_time.has_value()) {
      const TokenRow before = it->second.row;
      it->second.row.revoke_time = now;
      if (audit != nullptr) audits_.push_back(TokenAuditEvent(*audit, &before, it->second.row));
    }
    return it->second.row;
  }

  std::vector<jobwheel::v1::AuditEvent> audits() {
    absl::MutexLock lock(&mu_);
    return audits_;
  }

  // The stored hashes (to check no secret is kept).
  std::vector<std::string> Hashes() {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (auto& [id, e] : rows_) out.push_back(e.hash);
    return out;
  }
  int lookups() {
    absl::MutexLock lock(&mu_);
    return lookups_;
  }
  void set_available(bool available) {
    absl::MutexLock lock(&mu_);
    available_ = available;
  }

 private:
  struct Entry {
    TokenRow row;
    std::string hash;
  };
  absl::Mutex mu_;
  std::map<int64_t, Entry> rows_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  int lookups_ ABSL_GUARDED_BY(mu_) = 0;
  bool available_ ABSL_GUARDED_BY(mu_) = true;
  std::vector<jobwheel::v1::AuditEvent> audits_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUTH_IN_MEMORY_TOKEN_STORE_H_
