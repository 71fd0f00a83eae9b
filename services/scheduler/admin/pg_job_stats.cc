// PgJobStore's dashboard aggregates: GetRunStats and CountJobs.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/pg/pg_arrays.h"
#include "common/pg/sql_enums.h"
#include "common/time/proto_time.h"
#include "pqxx/pqxx"
#include "services/scheduler/admin/pg_job_store.h"
#include "services/scheduler/admin/run_stats.h"

namespace jobwheel::scheduler::admin {
namespace {

// Runs triggered in [$1, $2) in buckets of $3 microseconds counted from $8 (= $1 in Unix
// microseconds), for app $4 ('' = all), job $5 (0 = all) and, when $6, only apps $7. The range
// on trigger_time lets the BRIN index runs_trigger_time (or runs_job_time for one job) narrow
// the scan. ROLLUP gives (bucket, status) counts, per-bucket lateness (GROUPING = 1) and the
// window's lateness (GROUPING = 3); lateness (handler start minus scheduled time; a held run's
// trigger_time is its planned time) is measured on schedule-driven runs that started.
const std::string& RunStatsSql() {
  static const std::string* sql = new std::string(absl::StrCat(
      "WITH r AS (SELECT (((EXTRACT(EPOCH FROM r.trigger_time) * 1000000)::bigint - $8::bigint) "
      "/ $3::bigint) AS bucket, r.status, "
      "CASE WHEN r.trigger_type IN ",
      jobwheel::sql::SqlIntList(
          {jobwheel::v1::TRIGGER_TYPE_CRON, jobwheel::v1::TRIGGER_TYPE_FIX_RATE}),
      " AND r.start_time IS NOT NULL "
      "THEN (EXTRACT(EPOCH FROM r.start_time - r.scheduled_time) * 1000000)::bigint END "
      "AS late_us FROM runs r "
      "WHERE r.trigger_time >= $1::timestamptz AND r.trigger_time < $2::timestamptz "
      "AND ($4 = '' OR r.app = $4) AND ($5::bigint = 0 OR r.job_id = $5::bigint) "
      "AND (NOT $6::boolean OR r.app = ANY($7::text[]))) "
      "SELECT GROUPING(bucket, status), bucket, status, count(*), count(late_us), "
      "percentile_cont(0.5) WITHIN GROUP (ORDER BY late_us::double precision), "
      "percentile_cont(0.99) WITHIN GROUP (ORDER BY late_us::double precision), max(late_us) "
      "FROM r GROUP BY ROLLUP (bucket, status)"));
  return *sql;
}

// Every app that is registered, has jobs or has open runs, with its counts; $1 = app ('' =
// all), when $2 only apps $3. The open-run predicate matches the partial index runs_open.
const std::string& CountJobsSql() {
  static const std::string* sql = new std::string(absl::StrCat(
      "SELECT a.app, COALESCE(j.jobs, 0), COALESCE(j.enabled_jobs, 0), "
      "COALESCE(o.pending_runs, 0), COALESCE(o.running_runs, 0) "
      "FROM (SELECT name AS app FROM apps UNION SELECT app FROM jobs "
      "UNION SELECT app FROM runs WHERE status IN ",
      jobwheel::sql::OpenRunStatusesSql(),
      ") a "
      "LEFT JOIN (SELECT app, count(*) AS jobs, count(*) FILTER (WHERE enabled) AS enabled_jobs "
      "FROM jobs GROUP BY app) j ON j.app = a.app "
      "LEFT JOIN (SELECT app, count(*) FILTER (WHERE status = ",
      jobwheel::sql::SqlInt(jobwheel::v1::RUN_STATUS_PENDING),
      ") AS pending_runs, count(*) FILTER (WHERE status = ",
      jobwheel::sql::SqlInt(jobwheel::v1::RUN_STATUS_RUNNING),
      ") AS running_runs FROM runs WHERE status IN ", jobwheel::sql::OpenRunStatusesSql(),
      " GROUP BY app) o ON o.app = a.app "
      "WHERE ($1 = '' OR a.app = $1) AND (NOT $2::boolean OR a.app = ANY($3::text[])) "
      "ORDER BY a.app"));
  return *sql;
}

LatenessStats LatenessFromRow(const pqxx::row& row) {
  LatenessStats l;
  l.samples = row[4].as<int64_t>();
  if (l.samples == 0) return l;
  l.p50 = RoundToMicroseconds(absl::Microseconds(row[5].as<double>()));
  l.p99 = RoundToMicroseconds(absl::Microseconds(row[6].as<double>()));
  l.max = absl::Microseconds(row[7].as<int64_t>());
  return l;
}

}  // namespace

absl::StatusOr<RunStatsRows> PgJobStore::RunStats(const RunStatsQuery& query) {
  RunStatsRows out;
  absl::Status s = pool_.Run("run stats", [&](pqxx::connection& conn) {
    pqxx::read_transaction tx(conn);
    pqxx::result r =
        tx.exec_params(RunStatsSql(), ToPgTimestamp(query.start), ToPgTimestamp(query.end),
                       absl::ToInt64Microseconds(query.bucket), query.app, query.job_id,
                       query.only_apps.has_value(),
                       ToPgArray(query.only_apps.value_or(std::vector<std::string>())),
                       absl::ToUnixMicros(query.start));
    for (const pqxx::row& row : r) {
      const int grouping = row[0].as<int>();
      if (grouping == 0) {
        const int status = row[2].as<int>();
        RunStatsRows::Count c;
        c.bucket = row[1].as<int64_t>();
        c.status = jobwheel::v1::RunStatus_IsValid(status)
                       ? static_cast<jobwheel::v1::RunStatus>(status)
                       : jobwheel::v1::RUN_STATUS_UNSPECIFIED;
        c.runs = row[3].as<int64_t>();
        out.counts.push_back(c);
      } else if (grouping == 1) {
        LatenessStats l = LatenessFromRow(row);
        if (l.samples > 0) out.lateness[row[1].as<int64_t>()] = l;
      } else {
        out.overall_lateness = LatenessFromRow(row);
      }
    }
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<AppJobCountsRow>> PgJobStore::CountJobs(
    const std::string& app, const std::optional<std::vector<std::string>>& only_apps) {
  std::vector<AppJobCountsRow> out;
  absl::Status s = pool_.Run("count jobs", [&](pqxx::connection& conn) {
    pqxx::read_transaction tx(conn);
    pqxx::result r = tx.exec_params(CountJobsSql(), app, only_apps.has_value(),
                                    ToPgArray(only_apps.value_or(std::vector<std::string>())));
    for (const pqxx::row& row : r) {
      AppJobCountsRow c;
      c.app = row[0].as<std::string>();
      c.jobs = row[1].as<int64_t>();
      c.enabled_jobs = row[2].as<int64_t>();
      c.pending_runs = row[3].as<int64_t>();
      c.running_runs = row[4].as<int64_t>();
      out.push_back(std::move(c));
    }
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace jobwheel::scheduler::admin
