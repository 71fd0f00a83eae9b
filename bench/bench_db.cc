#include "bench/bench_db.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "common/testing/process.h"
#include "common/time/proto_time.h"
#include "jobwheel/v1/types.pb.h"

namespace jobwheel::bench {
namespace {

// Attempts of a statement PostgreSQL aborts on a deadlock or a serialization failure.
constexpr int kStatementAttempts = 5;

// Status values as stored (the proto enums' numbers).
constexpr int kFirePending = v1::FIRE_STATUS_PENDING;
constexpr int kFireSkipped = v1::FIRE_STATUS_SKIPPED;
constexpr int kFireFailed = v1::FIRE_STATUS_FAILED;
constexpr int kRunPending = v1::RUN_STATUS_PENDING;
constexpr int kRunRunning = v1::RUN_STATUS_RUNNING;
constexpr int kRunSucceeded = v1::RUN_STATUS_SUCCEEDED;
constexpr int kRoutingRound = v1::ROUTING_STRATEGY_ROUND;

}  // namespace

absl::StatusOr<std::unique_ptr<BenchDb>> BenchDb::Connect(const std::string& dsn, std::string app) {
  try {
    auto conn = std::make_unique<pqxx::connection>(dsn);
    return std::unique_ptr<BenchDb>(new BenchDb(std::move(conn), std::move(app)));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("database: ", e.what()));
  }
}

std::string BenchDb::OwnJobs() const {
  return absl::StrCat("job_id IN (SELECT id FROM jobs WHERE app = ", conn_->quote(app_), ")");
}

std::string BenchDb::Ts(absl::Time t) {
  if (t == absl::InfinitePast()) return "'-infinity'::timestamptz";
  if (t == absl::InfiniteFuture()) return "'infinity'::timestamptz";
  return absl::StrCat("'", ToPgTimestamp(t), "'::timestamptz");
}

absl::Status BenchDb::Exec(absl::string_view sql) { return Query(sql).status(); }

absl::StatusOr<pqxx::result> BenchDb::Query(absl::string_view sql) {
  // A statement PostgreSQL aborted on a deadlock or a serialization failure (the fire path
  // locks the same rows) is run again; the bench's own statements lock fires in id order, so
  // this is the safety net, not the rule.
  for (int attempt = 1;; ++attempt) {
    try {
      pqxx::nontransaction tx(*conn_);
      return tx.exec(std::string(sql));
    } catch (const pqxx::transaction_rollback& e) {
      if (attempt >= kStatementAttempts) {
        return absl::AbortedError(absl::StrCat(sql.substr(0, 200), ": ", e.what()));
      }
      ++retried_;
      absl::SleepFor(absl::Milliseconds(20 * attempt));
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat(sql.substr(0, 200), ": ", e.what()));
    }
  }
}

absl::StatusOr<int64_t> BenchDb::Count(absl::string_view sql) {
  ASSIGN_OR_RETURN(pqxx::result r, Query(sql));
  return r.empty() || r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
}

absl::StatusOr<std::vector<JobSchedule>> BenchDb::CreateSpreadJobs(absl::string_view tag, int n,
                                                                   int64_t period_s,
                                                                   absl::Time first) {
  const int64_t period_us = period_s * 1000000;
  RETURN_IF_ERROR(Exec(absl::StrCat(
      "INSERT INTO jobs (app, name, schedule_kind, fix_rate_seconds, fix_rate_start, handler, "
      "routing_strategy, next_fire_at) SELECT ",
      conn_->quote(app_), ", '", tag, "-' || g, 'FIX_RATE', ", period_s, ", s, 'noop', ",
      kRoutingRound, ", s FROM (SELECT g, ", Ts(first), " + ((g - 1)::bigint * ", period_us, " / ",
      n, ") * interval '1 microsecond' AS s FROM generate_series(1, ", n, ") AS g) AS x")));
  return ReadSchedules(/*burst=*/false, first);
}

absl::StatusOr<std::vector<JobSchedule>> BenchDb::CreateBurstJobs(absl::string_view tag, int n,
                                                                  absl::Time first) {
  RETURN_IF_ERROR(Exec(absl::StrCat(
      "INSERT INTO jobs (app, name, schedule_kind, cron_expression, handler, routing_strategy, "
      "next_fire_at) SELECT ",
      conn_->quote(app_), ", '", tag, "-' || g, 'CRON', '* * * * * ?', 'noop', ", kRoutingRound,
      ", ", Ts(first), " FROM generate_series(1, ", n, ") AS g")));
  return ReadSchedules(/*burst=*/true, first);
}

absl::StatusOr<std::vector<JobSchedule>> BenchDb::ReadSchedules(bool burst, absl::Time first) {
  ASSIGN_OR_RETURN(pqxx::result r,
                   Query(absl::StrCat("SELECT id, (EXTRACT(EPOCH FROM fix_rate_start) * "
                                      "1000000)::BIGINT, fix_rate_seconds FROM jobs WHERE app = ",
                                      conn_->quote(app_), " ORDER BY id")));
  std::vector<JobSchedule> out;
  out.reserve(r.size());
  for (const auto& row : r) {
    JobSchedule s;
    s.job_id = row[0].as<int64_t>();
    if (burst) {
      s.first_us = absl::ToUnixMicros(first);
      s.period_us = 1000000;
    } else {
      s.first_us = row[1].as<int64_t>();
      s.period_us = row[2].as<int64_t>() * 1000000;
    }
    out.push_back(s);
  }
  return out;
}

absl::Status BenchDb::StopLoad(absl::Time from) {
  RETURN_IF_ERROR(DisableJobs("TRUE"));
  return DeletePendingFires(OwnJobs(), from);
}

absl::Status BenchDb::DisableJobs(absl::string_view which) {
  // As the API's pause (JobWrite::cut_off): a job behind its schedule (next_fire_at past, not
  // yet claimed, as while the leader sheds) has the due times the pause cuts off recorded in one
  // SKIPPED row at the first of them, naming how many. The jobs are locked in id order (the
  // claim takes them FOR UPDATE SKIP LOCKED) and read again after any wait.
  return Exec(absl::StrCat(
      "WITH cut AS (SELECT id, next_fire_at AS first, fix_rate_seconds AS p, "
      "CASE WHEN fix_rate_seconds > 0 AND next_fire_at < now() THEN "
      "ceil(EXTRACT(EPOCH FROM now() - next_fire_at) / fix_rate_seconds)::bigint END AS n "
      "FROM jobs WHERE app = ",
      conn_->quote(app_), " AND (", which,
      ") AND enabled ORDER BY id FOR UPDATE), "
      "paused AS (UPDATE jobs j SET enabled = false, next_fire_at = NULL FROM cut "
      "WHERE j.id = cut.id) "
      "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, reason) "
      "SELECT id, first, ",
      v1::TRIGGER_TYPE_FIX_RATE, ", ", kFireSkipped,
      ", 'misfire: ' || n || ' fire(s) from ' || first || ' to ' || "
      "(first + (n - 1) * p * interval '1 second') || "
      "' skipped; the job was paused before they were claimed' "
      "FROM cut WHERE n > 0 ON CONFLICT DO NOTHING"));
}

absl::Status BenchDb::DeletePendingFires(absl::string_view jobs, absl::Time from) {
  // Locked in id order, as dispatchers and the leader lock fire rows: a plain DELETE locks them
  // in scan order and deadlocked against a dispatcher's batch under load.
  return Exec(absl::StrCat(
      "DELETE FROM fires WHERE id IN (SELECT id FROM fires WHERE status = ", kFirePending,
      " AND scheduled_at >= ", Ts(from), " AND ", jobs, " ORDER BY id FOR UPDATE)"));
}

absl::Status BenchDb::PauseJobs(const std::vector<int64_t>& ids, absl::Time from) {
  if (ids.empty()) return absl::OkStatus();
  const std::string list = absl::StrCat("ARRAY[", absl::StrJoin(ids, ","), "]::bigint[]");
  RETURN_IF_ERROR(DisableJobs(absl::StrCat("id = ANY(", list, ")")));
  return DeletePendingFires(absl::StrCat("job_id = ANY(", list, ")"), from);
}

absl::Status BenchDb::WaitDrained(absl::Time due_before, absl::Duration timeout) {
  absl::Status last;
  const std::string pending =
      absl::StrCat("SELECT count(*) FROM fires WHERE status = ", kFirePending,
                   " AND scheduled_at < ", Ts(due_before), " AND ", OwnJobs());
  const std::string open = absl::StrCat("SELECT count(*) FROM runs WHERE status IN (", kRunPending,
                                        ", ", kRunRunning, ") AND ", OwnJobs());
  // Polled as "is there any" (the first row found ends the scan): counting every pending fire
  // of an overloaded stack each poll took a quarter of a second of PostgreSQL's time, spent
  // against the drain it waits for. Counted once, for the message.
  auto any = [](const std::string& count) {
    return absl::StrCat("SELECT EXISTS (", absl::StrReplaceAll(count, {{"count(*)", "1"}}),
                        ")::int");
  };
  const std::string any_pending = any(pending), any_open = any(open);
  int64_t left_fires = -1, left_runs = -1;
  const bool drained = testing::Eventually(
      [&] {
        absl::StatusOr<int64_t> f = Count(any_pending);
        absl::StatusOr<int64_t> r = Count(any_open);
        if (!f.ok() || !r.ok()) {
          last = f.ok() ? r.status() : f.status();
          return false;
        }
        return *f == 0 && *r == 0;
      },
      timeout);
  if (drained) return absl::OkStatus();
  if (absl::StatusOr<int64_t> f = Count(pending); f.ok()) left_fires = *f;
  if (absl::StatusOr<int64_t> r = Count(open); r.ok()) left_runs = *r;
  return absl::DeadlineExceededError(
      absl::StrCat("the bench's jobs did not drain within ", absl::FormatDuration(timeout), ": ",
                   left_fires, " fires still pending, ", left_runs, " runs still open",
                   last.ok() ? "" : absl::StrCat(" (", last.ToString(), ")")));
}

absl::Status BenchDb::RemoveOwnLoad(absl::Duration timeout) {
  RETURN_IF_ERROR(StopLoad(absl::InfinitePast()));
  RETURN_IF_ERROR(WaitDrained(absl::InfiniteFuture(), timeout));
  RETURN_IF_ERROR(DeleteOwnRows());
  // Dead rows and index entries gone before the next load (no TRUNCATE: other rows stay).
  return Exec("VACUUM ANALYZE jobs, fires, runs");
}

absl::Status BenchDb::DeleteOwnRows() {
  // Id order, as the dispatchers lock runs and fires (a load that did not drain may still
  // have dispatchers writing).
  RETURN_IF_ERROR(Exec(absl::StrCat("DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE ",
                                    OwnJobs(), " ORDER BY id FOR UPDATE)")));
  RETURN_IF_ERROR(Exec(absl::StrCat("DELETE FROM fires WHERE id IN (SELECT id FROM fires WHERE ",
                                    OwnJobs(), " ORDER BY id FOR UPDATE)")));
  return Exec(absl::StrCat("DELETE FROM jobs WHERE app = ", conn_->quote(app_)));
}

absl::Status BenchDb::RemoveOwnRegistrations(const std::vector<std::string>& apps) {
  std::vector<std::string> quoted;
  for (const std::string& a : apps) quoted.push_back(conn_->quote(a));
  const std::string list = absl::StrJoin(quoted, ", ");
  // The registry takes a stopped executor offline at its stream's close or beat deadline.
  const std::string online =
      absl::StrCat("SELECT count(*) FROM executors WHERE online AND app IN (", list, ")");
  const bool offline = testing::Eventually(
      [&] {
        absl::StatusOr<int64_t> n = Count(online);
        return n.ok() && *n == 0;
      },
      absl::Seconds(10));
  if (!offline) {
    return absl::DeadlineExceededError(
        absl::StrCat("executors of ", list, " still online 10s after they were stopped"));
  }
  RETURN_IF_ERROR(
      Exec(absl::StrCat("DELETE FROM executors WHERE NOT online AND app IN (", list, ")")));
  return Exec(absl::StrCat("DELETE FROM apps a WHERE name IN (", list,
                           ") AND NOT EXISTS (SELECT 1 FROM executors e WHERE e.app = a.name) "
                           "AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.app = a.name)"));
}

absl::StatusOr<BenchDb::FireRows> BenchDb::ReadFires(absl::Time from, absl::Time to) {
  ASSIGN_OR_RETURN(pqxx::result r,
                   Query(absl::StrCat("SELECT job_id, (EXTRACT(EPOCH FROM scheduled_at) * "
                                      "1000000)::BIGINT, status, reason FROM fires WHERE ",
                                      OwnJobs(), " AND scheduled_at >= ", Ts(from),
                                      " AND scheduled_at < ", Ts(to))));
  FireRows out;
  out.keys.reserve(r.size());
  for (const auto& row : r) {
    const std::string reason = row[3].as<std::string>();
    if (CoveredCount(reason) > 1) {
      out.ranges.push_back({row[0].as<int64_t>(), row[1].as<int64_t>(), reason});
      continue;
    }
    out.keys.emplace_back(row[0].as<int64_t>(), row[1].as<int64_t>());
    const int status = row[2].as<int>();
    if (status == kFireFailed) ++out.failed;
    if (status == kFireSkipped) ++out.skipped;
    if (status == kFirePending) ++out.pending;
  }
  return out;
}

absl::StatusOr<int64_t> BenchDb::CountCompleted(absl::Time from, absl::Time to) {
  return Count(absl::StrCat(
      "SELECT count(DISTINCT fire_id) FROM runs WHERE status = ", kRunSucceeded,
      " AND scheduled_time >= ", Ts(from), " AND scheduled_time < ", Ts(to), " AND ", OwnJobs()));
}

absl::StatusOr<int64_t> BenchDb::CountStarted(absl::Time from, absl::Time to) {
  return Count(absl::StrCat("SELECT count(DISTINCT fire_id) FROM runs WHERE start_time >= ",
                            Ts(from), " AND start_time < ", Ts(to), " AND ", OwnJobs()));
}

}  // namespace jobwheel::bench
