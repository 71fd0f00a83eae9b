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
class TokenStore : public TokenLookup {
 public:
  // ALREADY_EXISTS when a token that is not revoked has the same name.
  virtual absl::StatusOr<TokenRow> Create(const NewToken& token) = 0;
  // By id; revoked tokens only when asked.
  virtual absl::StatusOr<std::vector<TokenRow>> List(bool include_revoked) = 0;
  // Sets revoke_time (idempotent: a revoked token keeps its first revoke_time). NOT_FOUND.
  virtual absl::StatusOr<TokenRow> Revoke(int64_t id, absl::Time now) = 0;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUTH_TOKEN_STORE_H_
