#ifndef JOBWHEEL_COMMON_PG_PG_PREPARED_H_
#define JOBWHEEL_COMMON_PG_PG_PREPARED_H_

#include <string>
#include <utility>

#include "pqxx/pqxx"

namespace jobwheel {

// Runs `sql` as the prepared statement `name` on the transaction's connection: PostgreSQL
// parses and plans it once per connection instead of on every call, which is a good part of
// the server's CPU for the small, frequent statements of the fire path. `name` must always
// come with the same `sql` (libpqxx rejects a redefinition); registering it again is a lookup.
template <typename... Args>
pqxx::result ExecPrepared(pqxx::transaction_base& tx, const std::string& name,
                          const std::string& sql, Args&&... args) {
  tx.conn().prepare(name, sql);
  return tx.exec_prepared(name, std::forward<Args>(args)...);
}

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_PG_PG_PREPARED_H_
