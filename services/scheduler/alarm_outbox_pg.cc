#include "services/scheduler/alarm_outbox_pg.h"

#include <algorithm>

#include "common/pg/pg_arrays.h"
#include "common/time/proto_time.h"

namespace jobwheel::scheduler {

int QueueAlarms(pqxx::work& tx, const std::vector<AlarmEvent>& events) {
  if (events.empty()) return 0;
  std::vector<std::string> kind, key, payload;
  std::vector<int64_t> job, run;
  for (const AlarmEvent& e : events) {
    kind.push_back(AlarmKindName(e.kind));
    key.push_back(e.key);
    payload.push_back(AlarmJson(e));
    job.push_back(e.job_id);
    run.push_back(e.run_id);
  }
  pqxx::result ins = tx.exec_params(
      "INSERT INTO alarm_outbox (kind, job_id, run_id, idempotency_key, payload) "
      "SELECT u.kind, u.job_id, NULLIF(u.run_id, 0), u.key, u.payload "
      "FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[]) "
      "AS u(kind, job_id, run_id, key, payload) "
      "ON CONFLICT (idempotency_key) DO NOTHING RETURNING id",
      ToPgArray(kind), ToPgIntArray(job), ToPgIntArray(run), ToPgArray(key), ToPgArray(payload));
  return static_cast<int>(ins.size());
}

absl::StatusOr<std::vector<OutboxAlarm>> PgAlarmOutbox::ClaimDue(absl::Time now,
                                                                 absl::Duration lease, int limit) {
  std::vector<OutboxAlarm> out;
  absl::Status s = elector_.RunFenced("claim alarms", [&](pqxx::work& tx) {
    out.clear();
    pqxx::result rows = tx.exec_params(
        "WITH due AS (SELECT id FROM alarm_outbox WHERE sent_at IS NULL AND "
        "next_attempt <= $1::timestamptz ORDER BY next_attempt, id LIMIT $3 "
        "FOR UPDATE SKIP LOCKED) "
        "UPDATE alarm_outbox a SET next_attempt = $2::timestamptz FROM due WHERE a.id = due.id "
        "RETURNING a.id, a.kind, a.idempotency_key, a.payload, a.attempts",
        ToPgTimestamp(now), ToPgTimestamp(now + lease), limit);
    for (const pqxx::row& r : rows) {
      out.push_back({r[0].as<int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(),
                     r[3].as<std::string>(), r[4].as<int>()});
    }
  });
  if (!s.ok()) return s;
  std::sort(out.begin(), out.end(),
            [](const OutboxAlarm& a, const OutboxAlarm& b) { return a.id < b.id; });
  return out;
}

absl::Status PgAlarmOutbox::MarkSent(int64_t id, absl::Time at) {
  return elector_.RunFenced("alarm sent", [&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE alarm_outbox SET sent_at = $2::timestamptz, last_error = '' "
        "WHERE id = $1 AND sent_at IS NULL",
        id, ToPgTimestamp(at));
  });
}

absl::Status PgAlarmOutbox::MarkFailed(int64_t id, const std::string& error,
                                       absl::Time next_attempt) {
  return elector_.RunFenced("alarm failed", [&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE alarm_outbox SET attempts = attempts + 1, last_error = $2, "
        "next_attempt = $3::timestamptz WHERE id = $1 AND sent_at IS NULL",
        id, error, ToPgTimestamp(next_attempt));
  });
}

absl::Status PgAlarmOutbox::Postpone(const std::vector<int64_t>& ids, absl::Time next_attempt) {
  if (ids.empty()) return absl::OkStatus();
  return elector_.RunFenced("alarms postponed", [&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE alarm_outbox SET next_attempt = $2::timestamptz "
        "WHERE id = ANY($1::bigint[]) AND sent_at IS NULL",
        ToPgIntArray(ids), ToPgTimestamp(next_attempt));
  });
}

}  // namespace jobwheel::scheduler
