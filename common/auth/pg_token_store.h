#ifndef JOBWHEEL_COMMON_AUTH_PG_TOKEN_STORE_H_
#define JOBWHEEL_COMMON_AUTH_PG_TOKEN_STORE_H_

#include "common/auth/token_store.h"
#include "common/pg/pg_pool.h"

namespace jobwheel {

// TokenStore on the `tokens` table (migration 2). FindActive also stamps last_used_time, so
// each server writes a token's row at most once per authenticator cache period. Audited writes
// insert their event into audit_events in the transaction of the change. Thread-safe.
class PgTokenStore : public TokenStore {
 public:
  explicit PgTokenStore(PgPool& pool) : pool_(pool) {}

  absl::StatusOr<absl::optional<StoredToken>> FindActive(const std::string& secret_hash) override;
  using TokenStore::Create;
  using TokenStore::Revoke;
  absl::StatusOr<TokenRow> Create(const NewToken& token,
                                  const jobwheel::v1::AuditEvent* audit) override;
  absl::StatusOr<std::vector<TokenRow>> List(bool include_revoked) override;
  absl::StatusOr<TokenRow> Revoke(int64_t id, absl::Time now,
                                  const jobwheel::v1::AuditEvent* audit) override;

 private:
  PgPool& pool_;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUTH_PG_TOKEN_STORE_H_
