#ifndef JOBWHEEL_COMMON_PG_PG_PREPARED_H_
#define JOBWHEEL_COMMON_PG_PG_PREPARED_H_

#include <string>
#include <utility>

#include "pqxx/pqxx"

namespace jobwheel {

// Whether ExecPrepared uses named server-side prepared statements: --db_prepared_statements
// (default true), a flag of every binary that links this library. A connection pooler in
// transaction mode (PgBouncer 1.18) runs each transaction on whichever server connection is
// free, where a statement prepared on another one does not exist; with the flag false each
// statement travels with its parameters (the unnamed statement, as exec_params does).
bool ServerPreparedStatements();

// Runs `sql` as the prepared statement `name` on the transaction's connection: PostgreSQL
// parses and plans it once per connection instead of on every call, which is a good part of
// the server's CPU for the small, frequent statements of the fire path. `name` must always
// come with the same `sql` (libpqxx rejects a redefinition); registering it again is a lookup.
template <typename... Args>
pqxx::result ExecPrepared(pqxx::transaction_base& tx, const std::string& name,
                          const std::string& sql, Args&&... args) {
  if (!ServerPreparedStatements()) return tx.exec_params(sql, std::forward<Args>(args)...);
  tx.conn().prepare(name, sql);
  return tx.exec_prepared(name, std::forward<Args>(args)...);
}

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_PG_PG_PREPARED_H_
