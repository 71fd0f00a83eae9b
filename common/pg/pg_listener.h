#ifndef JOBWHEEL_COMMON_PG_PG_LISTENER_H_
#define JOBWHEEL_COMMON_PG_PG_LISTENER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "pqxx/pqxx"

namespace jobwheel {

// The DSN LISTEN sessions use: --db_listen_dsn (a flag of every binary linking this library)
// when set, else `dsn`.
std::string ListenDsn(const std::string& dsn);

// A dedicated connection that LISTENs on one notification channel (to ListenDsn(dsn)). Wait() pings
// the server every few seconds so that a silently dead connection is noticed. Not thread-safe: one
// thread connects and waits.
class PgListener {
 public:
  PgListener(std::string dsn, std::string channel, const Clock& clock);
  ~PgListener();
  PgListener(const PgListener&) = delete;
  PgListener& operator=(const PgListener&) = delete;

  // (Re)connects and subscribes. Notifications sent while not subscribed are lost.
  absl::Status Connect();
  bool connected() const { return conn_ != nullptr; }
  // The payloads that arrived, waiting up to `timeout` when none is pending. A lost
  // connection is UNAVAILABLE (and disconnected: Connect() again).
  absl::StatusOr<std::vector<std::string>> Wait(absl::Duration timeout);
  void Disconnect();

 private:
  class Receiver;

  const std::string dsn_;
  const std::string channel_;
  const Clock& clock_;
  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<Receiver> receiver_;
  std::vector<std::string> payloads_;
  absl::Time last_ping_ = absl::InfinitePast();
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_PG_PG_LISTENER_H_
