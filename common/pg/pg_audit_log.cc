#include "common/pg/pg_audit_log.h"

#include <optional>
#include <string>

#include "common/pg/pg_arrays.h"
#include "common/time/proto_time.h"

namespace jobwheel {
namespace {

std::vector<std::string> TextArray(const pqxx::field& f) {
  std::vector<std::string> out;
  if (f.is_null()) return out;
  pqxx::array_parser p = f.as_array();
  for (auto it = p.get_next(); it.first != pqxx::array_parser::done; it = p.get_next()) {
    if (it.first == pqxx::array_parser::string_value) out.push_back(it.second);
    if (it.first == pqxx::array_parser::null_value) out.emplace_back();
  }
  return out;
}

std::optional<std::string> PgTime(const std::optional<absl::Time>& t) {
  if (!t) return std::nullopt;
  return ToPgTimestamp(*t);
}

}  // namespace

int64_t InsertAuditEvent(pqxx::work& tx, const jobwheel::v1::AuditEvent& e) {
  std::vector<std::string> fields, before, after;
  for (const jobwheel::v1::AuditFieldChange& c : e.changes()) {
    fields.push_back(c.field());
    before.push_back(c.before());
    after.push_back(c.after());
  }
  return tx
      .exec_params1(
          "INSERT INTO audit_events (actor_token_id, actor_name, action, target, apps, "
          "change_fields, change_before, change_after, peer, request_id) VALUES ($1::bigint, $2, "
          "$3, $4, $5::text[], $6::text[], $7::text[], $8::text[], $9, $10) RETURNING id",
          e.actor_token_id(), e.actor_name(), e.action(), e.target(), ToPgArray(e.apps()),
          ToPgArray(fields), ToPgArray(before), ToPgArray(after), e.peer(), e.request_id())[0]
      .as<int64_t>();
}

std::vector<jobwheel::v1::AuditEvent> SelectAuditEvents(pqxx::transaction_base& tx,
                                                        const AuditFilter& filter,
                                                        int64_t before_id, int limit) {
  pqxx::result rows = tx.exec_params(
      "SELECT id, (EXTRACT(EPOCH FROM time) * 1000000)::BIGINT, actor_token_id, actor_name, "
      "action, target, apps, change_fields, change_before, change_after, peer, request_id "
      "FROM audit_events WHERE ($1::bigint = 0 OR id < $1::bigint) "
      "AND ($2 = '' OR actor_name = $2) AND ($3 = '' OR target = $3) "
      "AND ($4 = '' OR action = $4) "
      "AND ($5::timestamptz IS NULL OR time >= $5::timestamptz) "
      "AND ($6::timestamptz IS NULL OR time < $6::timestamptz) "
      "AND (NOT $7::boolean OR apps && $8::text[]) ORDER BY id DESC LIMIT $9::int",
      before_id, filter.actor, filter.target, filter.action, PgTime(filter.from),
      PgTime(filter.before), filter.only_apps.has_value(),
      ToPgArray(filter.only_apps.value_or(std::vector<std::string>())), limit);
  std::vector<jobwheel::v1::AuditEvent> out;
  out.reserve(rows.size());
  for (const pqxx::row& r : rows) {
    jobwheel::v1::AuditEvent e;
    e.set_id(r[0].as<int64_t>());
    *e.mutable_time() = ToProto(FromMicros(r[1].as<int64_t>()));
    e.set_actor_token_id(r[2].as<int64_t>());
    e.set_actor_name(r[3].as<std::string>());
    e.set_action(r[4].as<std::string>());
    e.set_target(r[5].as<std::string>());
    for (std::string& app : TextArray(r[6])) e.add_apps(std::move(app));
    const std::vector<std::string> fields = TextArray(r[7]), before = TextArray(r[8]),
                                   after = TextArray(r[9]);
    for (size_t i = 0; i < fields.size(); ++i) {
      jobwheel::v1::AuditFieldChange* c = e.add_changes();
      c->set_field(fields[i]);
      if (i < before.size()) c->set_before(before[i]);
      if (i < after.size()) c->set_after(after[i]);
    }
    e.set_peer(r[10].as<std::string>());
    e.set_request_id(r[11].as<std::string>());
    out.push_back(std::move(e));
  }
  return out;
}

int DeleteAuditEventsBefore(pqxx::transaction_base& tx, absl::Time cutoff, int limit) {
  return static_cast<int>(
      tx.exec_params("DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE "
                     "time < $1::timestamptz ORDER BY id LIMIT $2::int)",
                     ToPgTimestamp(cutoff), limit)
          .affected_rows());
}

}  // namespace jobwheel
