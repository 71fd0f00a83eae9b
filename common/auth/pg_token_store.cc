#include "common/auth/pg_token_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/pg/pg_arrays.h"
#include "common/pg/pg_audit_log.h"
#include "common/time/proto_time.h"

namespace jobwheel {
namespace {

#define JW_TOKEN_COLUMNS                                  \
  "id, name, role, apps, "                                \
  "(EXTRACT(EPOCH FROM create_time) * 1000000)::BIGINT, " \
  "(EXTRACT(EPOCH FROM expire_time) * 1000000)::BIGINT, " \
  "(EXTRACT(EPOCH FROM revoke_time) * 1000000)::BIGINT, " \
  "(EXTRACT(EPOCH FROM last_used_time) * 1000000)::BIGINT "

constexpr char kFindActiveSql[] =
    "UPDATE tokens SET last_used_time = now() "
    "WHERE secret_hash = $1 AND revoke_time IS NULL RETURNING " JW_TOKEN_COLUMNS;
constexpr char kCreateSql[] =
    "INSERT INTO tokens (name, role, apps, secret_hash, create_time, expire_time) "
    "VALUES ($1, $2, $3::text[], $4, $5::timestamptz, NULLIF($6, '')::timestamptz) "
    "RETURNING " JW_TOKEN_COLUMNS;
constexpr char kListSql[] = "SELECT " JW_TOKEN_COLUMNS "FROM tokens ORDER BY id";
constexpr char kListActiveSql[] =
    "SELECT " JW_TOKEN_COLUMNS "FROM tokens WHERE revoke_time IS NULL ORDER BY id";
// The row after, and whether this call revoked it (a revoked token keeps its first time).
constexpr char kRevokeSql[] =
    "UPDATE tokens SET revoke_time = COALESCE(revoke_time, $2::timestamptz) FROM (SELECT id AS "
    "old_id, revoke_time IS NULL AS fresh FROM tokens WHERE id = $1 FOR UPDATE) prior "
    "WHERE id = prior.old_id RETURNING " JW_TOKEN_COLUMNS ", prior.fresh";

#undef JW_TOKEN_COLUMNS

absl::optional<absl::Time> OptionalTime(const pqxx::field& f) {
  if (f.is_null()) return absl::nullopt;
  return FromMicros(f.as<int64_t>());
}

// UNAUTHENTICATED when the row's role is not a Role of this version (the CHECK constraint
// admits only known names, but a row written by another version or by hand may hold another,
// such as the retired CLUSTER): such a token is refused, never read as some other role.
absl::StatusOr<TokenRow> RowFrom(const pqxx::row& row) {
  TokenRow t;
  t.id = row[0].as<int64_t>();
  t.name = row[1].as<std::string>();
  const std::string role = row[2].as<std::string>();
  absl::optional<Role> known = RoleFromName(role);
  if (!known.has_value()) {
    return absl::UnauthenticatedError(absl::StrCat("token ", t.name, " (id ", t.id, ") has role \"",
                                                   role, "\", which this version does not accept"));
  }
  t.role = *known;
  t.apps = FromPgArray(row[3]);
  t.create_time = FromMicros(row[4].as<int64_t>());
  t.expire_time = OptionalTime(row[5]);
  t.revoke_time = OptionalTime(row[6]);
  t.last_used_time = OptionalTime(row[7]);
  return t;
}

// What List and Revoke say of such a row: the caller is authenticated, the table is not right.
absl::Status UnknownRole(const absl::Status& refused) {
  return absl::FailedPreconditionError(
      absl::StrCat("tokens table: ", refused.message(), "; fix or delete the row in SQL"));
}

}  // namespace

absl::StatusOr<absl::optional<StoredToken>> PgTokenStore::FindActive(
    const std::string& secret_hash) {
  absl::optional<StoredToken> out;
  absl::Status refused;
  absl::Status s = pool_.Run("find_token", [&](pqxx::connection& conn) {
    out.reset();
    refused = absl::OkStatus();
    pqxx::work tx(conn);
    pqxx::result r = tx.exec_params(kFindActiveSql, secret_hash);
    tx.commit();
    if (r.empty()) return;
    absl::StatusOr<TokenRow> row = RowFrom(r[0]);
    if (!row.ok()) {
      refused = row.status();
      return;
    }
    out = ToStoredToken(*std::move(row));
  });
  if (!s.ok()) return s;
  if (!refused.ok()) return refused;
  return out;
}

absl::StatusOr<TokenRow> PgTokenStore::Create(const NewToken& token,
                                              const jobwheel::v1::AuditEvent* audit) {
  absl::StatusOr<TokenRow> row = absl::InternalError("create_token: no row returned");
  absl::Status s = pool_.Run("create_token", [&](pqxx::connection& conn) {
    pqxx::work tx(conn);
    // '' stands for NULL (never expires).
    const std::string expire =
        token.expire_time.has_value() ? ToPgTimestamp(*token.expire_time) : std::string();
    pqxx::result r = tx.exec_params(kCreateSql, token.name, std::string(RoleName(token.role)),
                                    ToPgArray(token.apps), token.secret_hash,
                                    ToPgTimestamp(token.create_time), expire);
    row = RowFrom(r[0]);
    if (row.ok() && audit != nullptr) InsertAuditEvent(tx, TokenAuditEvent(*audit, nullptr, *row));
    tx.commit();
  });
  if (s.code() == absl::StatusCode::kAlreadyExists) {
    return absl::AlreadyExistsError(
        absl::StrCat("name: a token named \"", token.name, "\" already exists (revoke it first)"));
  }
  if (!s.ok()) return s;
  return row;
}

absl::StatusOr<std::vector<TokenRow>> PgTokenStore::List(bool include_revoked) {
  std::vector<TokenRow> out;
  absl::Status unknown;
  absl::Status s = pool_.Run("list_tokens", [&](pqxx::connection& conn) {
    out.clear();
    unknown = absl::OkStatus();
    pqxx::read_transaction tx(conn);
    for (const pqxx::row& row : tx.exec(include_revoked ? kListSql : kListActiveSql)) {
      absl::StatusOr<TokenRow> t = RowFrom(row);
      if (!t.ok()) {
        unknown = UnknownRole(t.status());
        return;
      }
      out.push_back(*std::move(t));
    }
  });
  if (!s.ok()) return s;
  if (!unknown.ok()) return unknown;
  return out;
}

absl::StatusOr<TokenRow> PgTokenStore::Revoke(int64_t id, absl::Time now,
                                              const jobwheel::v1::AuditEvent* audit) {
  absl::optional<absl::StatusOr<TokenRow>> out;
  absl::Status s = pool_.Run("revoke_token", [&](pqxx::connection& conn) {
    out.reset();
    pqxx::work tx(conn);
    pqxx::result r = tx.exec_params(kRevokeSql, id, ToPgTimestamp(now));
    if (r.empty()) return;
    out = RowFrom(r[0]);
    if (!out->ok()) return;  // Rolled back: nothing is changed on a row this version cannot read.
    if (audit != nullptr && r[0][8].as<bool>()) {
      TokenRow before = **out;
      before.revoke_time.reset();
      InsertAuditEvent(tx, TokenAuditEvent(*audit, &before, **out));
    }
    tx.commit();
  });
  if (!s.ok()) return s;
  if (!out.has_value()) return absl::NotFoundError(absl::StrCat("token ", id, " not found"));
  if (!out->ok()) return UnknownRole(out->status());
  return *std::move(*out);
}

}  // namespace jobwheel
