#include "services/scheduler/executor_changes.h"

#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/pg/pg_pool.h"
#include "pqxx/pqxx"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {

bool ParseExecutorChange(const std::string& payload, ExecutorChange* change) {
  // Addresses may hold '|' only in theory; the address is everything after the third '|'.
  std::vector<std::string> parts = absl::StrSplit(payload, absl::MaxSplits('|', 3));
  if (parts.size() != 4 || parts[0] != "e" || parts[2].empty() || parts[3].empty()) return false;
  change->app = parts[2];
  change->address = parts[3];
  return true;
}

class ExecutorChangeListener::Receiver : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection& conn, const OnChange& on_change)
      : pqxx::notification_receiver(conn, kExecutorChangeChannel), on_change_(on_change) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override {
    ExecutorChange change;
    if (ParseExecutorChange(payload, &change)) on_change_(change);
  }

 private:
  const OnChange& on_change_;
};

ExecutorChangeListener::ExecutorChangeListener(std::string dsn, Options options, OnChange on_change,
                                               Clock& clock)
    : dsn_(std::move(dsn)), options_(options), on_change_(std::move(on_change)), clock_(clock) {}

ExecutorChangeListener::~ExecutorChangeListener() { Shutdown(); }

void ExecutorChangeListener::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ExecutorChangeListener::Shutdown() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
  Disconnect();
}

bool ExecutorChangeListener::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void ExecutorChangeListener::Disconnect() {
  receiver_.reset();
  conn_.reset();
}

bool ExecutorChangeListener::Subscribe() {
  Disconnect();
  auto conn = PgPool::Connect(dsn_);
  if (!conn.ok()) {
    spdlog::warn("executor changes: {}", conn.status().ToString());
    return false;
  }
  conn_ = std::move(conn).value();
  try {
    receiver_ = std::make_unique<Receiver>(*conn_, on_change_);  // Issues LISTEN.
    pqxx::nontransaction(*conn_).exec("SELECT 1");
    last_ping_ = clock_.Now();
  } catch (const std::exception& e) {
    spdlog::warn("executor changes: listen: {}", e.what());
    Disconnect();
    return false;
  }
  return true;
}

void ExecutorChangeListener::Loop() {
  while (!stopping()) {
    if (conn_ == nullptr) {
      if (!Subscribe()) {
        absl::MutexLock lock(&mu_);
        clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping_),
                                 clock_.Now() + options_.reconnect_delay);
        continue;
      }
      on_change_(ExecutorChange{});  // Announcements may have been missed meanwhile.
    }
    try {
      // A silently dead connection is noticed by a round trip now and then.
      if (clock_.Now() - last_ping_ > absl::Seconds(5)) {
        pqxx::nontransaction(*conn_).exec("SELECT 1");
        last_ping_ = clock_.Now();
      }
      // Delivers pending notifications to the receiver, or waits up to `poll` for one.
      if (conn_->get_notifs() == 0) {
        const int64_t us = absl::ToInt64Microseconds(options_.poll);
        conn_->await_notification(us / 1000000, us % 1000000);
      }
      if (!conn_->is_open()) {
        spdlog::warn("executor changes: connection closed");
        Disconnect();
      }
    } catch (const std::exception& e) {
      spdlog::warn("executor changes: {}", e.what());
      Disconnect();
    }
  }
}

}  // namespace jobwheel::scheduler
