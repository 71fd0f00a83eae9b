#include "common/pg/pg_listener.h"

#include <utility>

#include "absl/flags/flag.h"
#include "common/pg/pg_errors.h"
#include "common/pg/pg_pool.h"

ABSL_FLAG(std::string, db_listen_dsn, "",
          "PostgreSQL connection string for LISTEN sessions (default: --db_dsn); set it to "
          "PostgreSQL itself or a session-mode pool when --db_dsn goes through a pooler in "
          "transaction mode, which does not deliver notifications (docs/database.md)");

namespace jobwheel {

std::string ListenDsn(const std::string& dsn) {
  const std::string flag = absl::GetFlag(FLAGS_db_listen_dsn);
  return flag.empty() ? dsn : flag;
}

class PgListener::Receiver : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, const std::string& channel, std::vector<std::string>* sink)
      : pqxx::notification_receiver(conn, channel), sink_(sink) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override {
    sink_->push_back(payload);
  }

 private:
  std::vector<std::string>* sink_;
};

PgListener::PgListener(std::string dsn, std::string channel, const Clock& clock)
    : dsn_(ListenDsn(dsn)), channel_(std::move(channel)), clock_(clock) {}

PgListener::~PgListener() { Disconnect(); }

void PgListener::Disconnect() {
  receiver_.reset();
  conn_.reset();
}

absl::Status PgListener::Connect() {
  Disconnect();
  auto conn = PgPool::Connect(dsn_);
  if (!conn.ok()) return conn.status();
  conn_ = std::move(conn).value();
  try {
    // The receiver issues LISTEN on construction.
    receiver_ = std::make_unique<Receiver>(*conn_, channel_, &payloads_);
    pqxx::nontransaction(*conn_).exec("SELECT 1");
  } catch (const std::exception& e) {
    Disconnect();
    return PgErrorToStatus(e, "listen");
  }
  last_ping_ = clock_.Now();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> PgListener::Wait(absl::Duration timeout) {
  if (conn_ == nullptr) return absl::UnavailableError(channel_ + ": not connected");
  payloads_.clear();
  try {
    if (clock_.Now() - last_ping_ > absl::Seconds(5)) {
      pqxx::nontransaction(*conn_).exec("SELECT 1");
      last_ping_ = clock_.Now();
    }
    // Delivers pending notifications to the receiver, or waits up to `timeout` for one.
    if (conn_->get_notifs() == 0) {
      const int64_t us = absl::ToInt64Microseconds(timeout);
      conn_->await_notification(us / 1000000, us % 1000000);
    }
    if (!conn_->is_open()) {
      Disconnect();
      return absl::UnavailableError(channel_ + ": connection closed");
    }
  } catch (const std::exception& e) {
    Disconnect();
    return absl::UnavailableError(PgErrorToStatus(e, channel_).message());
  }
  std::vector<std::string> out = std::move(payloads_);
  payloads_.clear();
  return out;
}

}  // namespace jobwheel
