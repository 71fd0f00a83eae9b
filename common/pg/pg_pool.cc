#include "common/pg/pg_pool.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/pg/pg_errors.h"
#include "pqxx/pqxx"

namespace jobwheel {

PgPool::PgPool(std::string dsn, int size, Observer observer, PlanMode plan_mode, Clock& clock)
    : dsn_(std::move(dsn)),
      size_(size < 1 ? 1 : size),
      observer_(std::move(observer)),
      plan_mode_(plan_mode),
      clock_(clock) {}

PgPool::~PgPool() = default;

absl::StatusOr<std::unique_ptr<pqxx::connection>> PgPool::Connect(const std::string& dsn,
                                                                  PlanMode plan_mode) {
  try {
    auto conn = std::make_unique<pqxx::connection>(dsn);
    // set_variable() survives libpqxx's transparent reconnects.
    switch (plan_mode) {
      case PlanMode::kCustom:
        // A generic plan for `id = ANY($1)` joined to unnest()-ed arrays can turn into a scan
        // of a whole table.
        conn->set_variable("plan_cache_mode", "force_custom_plan");
        break;
      case PlanMode::kIndexLookups:
        // Planning every execution was a fifth of the server's CPU on the fire path.
        conn->set_variable("plan_cache_mode", "force_generic_plan");
        conn->set_variable("enable_seqscan", "off");
        conn->set_variable("enable_hashjoin", "off");
        conn->set_variable("enable_mergejoin", "off");
        break;
    }
    return conn;
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("connect to database: ", e.what()));
  }
}

absl::Status PgPool::Run(absl::string_view what, const std::function<void(pqxx::connection&)>& fn,
                         absl::Duration wait) {
  std::unique_ptr<pqxx::connection> conn;
  {
    absl::MutexLock lock(&mu_);
    auto available = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !idle_.empty() || in_use_ < size_;
    };
    if (!clock_.AwaitWithDeadline(&mu_, absl::Condition(&available), clock_.Now() + wait)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(what, ": no database connection free within ", absl::FormatDuration(wait)));
    }
    ++in_use_;
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  auto release = [&](bool keep) {
    absl::MutexLock lock(&mu_);
    --in_use_;
    if (keep && conn != nullptr) idle_.push_back(std::move(conn));
  };
  const absl::Time start = clock_.Now();
  if (conn == nullptr || !conn->is_open()) {
    conn.reset();
    std::string backing_off;
    {
      absl::MutexLock lock(&mu_);
      if (start < reconnect_after_) {
        backing_off =
            absl::StrCat("database unreachable, next connect in ",
                         absl::FormatDuration(reconnect_after_ - start), ": ", last_connect_error_);
      }
    }
    if (!backing_off.empty()) {
      release(false);
      if (observer_) observer_(what, clock_.Now() - start, false);
      return absl::UnavailableError(absl::StrCat(what, ": ", backing_off));
    }
    auto fresh = Connect(dsn_, plan_mode_);
    if (!fresh.ok()) {
      {
        absl::MutexLock lock(&mu_);
        backoff_ = std::min(std::max(2 * backoff_, absl::Milliseconds(50)), absl::Seconds(1));
        reconnect_after_ = clock_.Now() + backoff_;
        last_connect_error_ = std::string(fresh.status().message());
      }
      release(false);
      if (observer_) observer_(what, clock_.Now() - start, false);
      return absl::Status(fresh.status().code(),
                          absl::StrCat(what, ": ", fresh.status().message()));
    }
    {
      absl::MutexLock lock(&mu_);
      backoff_ = absl::ZeroDuration();
      reconnect_after_ = absl::InfinitePast();
    }
    conn = std::move(fresh).value();
  }
  absl::Status status;
  bool keep = true;
  try {
    fn(*conn);
  } catch (const std::exception& e) {
    status = PgErrorToStatus(e, what);
    keep = status.code() != absl::StatusCode::kUnavailable && conn->is_open();
  }
  if (observer_) observer_(what, clock_.Now() - start, status.ok());
  if (status.code() == absl::StatusCode::kUnavailable) {
    // The server is gone or no longer the primary: the idle connections are to it too.
    std::vector<std::unique_ptr<pqxx::connection>> stale;
    {
      absl::MutexLock lock(&mu_);
      stale.swap(idle_);
    }
  }
  release(keep);
  return status;
}

}  // namespace jobwheel
