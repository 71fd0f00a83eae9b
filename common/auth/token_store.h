#ifndef JOBWHEEL_COMMON_AUTH_TOKEN_STORE_H_
#define JOBWHEEL_COMMON_AUTH_TOKEN_STORE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "common/auth/token_authenticator.h"
#include "jobwheel/v1/job_admin.pb.h"

namespace jobwheel {

// One row of the tokens table (never the secret; only its hash is stored).
struct TokenRow {
  int64_t id = 0;
  std::string name;
  Role role = Role::kViewer;
  std::vector<std::string> apps;
  absl::Time create_time;
  absl::optional<absl::Time> expire_time;
  absl::optional<absl::Time> revoke_time;
  absl::optional<absl::Time> last_used_time;
};

// What the authenticator keeps of a row.
inline StoredToken ToStoredToken(TokenRow row) {
  StoredToken t;
  t.id = row.id;
  t.name = std::move(row.name);
  t.role = row.role;
  t.apps = std::move(row.apps);
  t.expire_time = row.expire_time;
  return t;
}

// A validated token to insert.
struct NewToken {
  std::string name;
  Role role = Role::kViewer;
  std::vector<std::string> apps;
  std::string secret_hash;  // HashTokenSecret(secret).
  absl::Time create_time;
  absl::optional<absl::Time> expire_time;
};

// Durable API tokens: lookups for every server (TokenLookup) and the admin operations of
// TokenAdminService. Implementations are thread-safe.
//
// Audit: a write given an `audit` event (actor, action, peer and request id set; nullptr:
// none) records it with the change, in the same transaction, completed with the target
// ("token <id>") and the fields it changed (name, role, apps, expire_time; revoke_time) —
// never the secret or its hash. A write that fails, or a revoke of a revoked token, records
// nothing.
class TokenStore : public TokenLookup {
 public:
  // ALREADY_EXISTS when a token that is not revoked has the same name.
  virtual absl::StatusOr<TokenRow> Create(const NewToken& token,
                                          const jobwheel::v1::AuditEvent* audit) = 0;
  absl::StatusOr<TokenRow> Create(const NewToken& token) { return Create(token, nullptr); }
  // By id; revoked tokens only when asked.
  virtual absl::StatusOr<std::vector<TokenRow>> List(bool include_revoked) = 0;
  // Sets revoke_time (idempotent: a revoked token keeps its first revoke_time). NOT_FOUND.
  virtual absl::StatusOr<TokenRow> Revoke(int64_t id, absl::Time now,
                                          const jobwheel::v1::AuditEvent* audit) = 0;
  absl::StatusOr<TokenRow> Revoke(int64_t id, absl::Time now) { return Revoke(id, now, nullptr); }
};

// The audit event of a token write: `audit` for target "token <id>" with the changes of
// `after` from `before` (nullptr: created) — name, role, apps, expire_time, revoke_time.
jobwheel::v1::AuditEvent TokenAuditEvent(const jobwheel::v1::AuditEvent& audit,
                                         const TokenRow* before, const TokenRow& after);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUTH_TOKEN_STORE_H_
