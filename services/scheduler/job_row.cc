#include "services/scheduler/job_row.h"

#include "common/pg/pg_arrays.h"
#include "common/time/proto_time.h"

namespace jobwheel::scheduler {

const char* const kJobColumns =
    "j.id, j.app, j.name, j.description, j.owner, j.alarm_contacts, j.schedule_kind, "
    "j.cron_expression, j.time_zone, j.fix_rate_seconds, "
    "(EXTRACT(EPOCH FROM j.fix_rate_start) * 1000000)::BIGINT, j.misfire_strategy, "
    "j.routing_strategy, j.block_strategy, j.handler, j.param, j.timeout_ms, "
    "j.fail_retry_count, j.child_job_ids, j.glue_type, j.script_source, j.script_version, "
    "j.enabled, (EXTRACT(EPOCH FROM j.next_fire_at) * 1000000)::BIGINT, "
    "(EXTRACT(EPOCH FROM j.create_time) * 1000000)::BIGINT, "
    "(EXTRACT(EPOCH FROM j.update_time) * 1000000)::BIGINT, j.schedule_error, j.fix_delay_ms";

const char* const kJobAdminColumns =
    "j.id, j.app, j.name, j.description, j.owner, j.alarm_contacts, j.schedule_kind, "
    "j.cron_expression, j.time_zone, j.fix_rate_seconds, "
    "(EXTRACT(EPOCH FROM j.fix_rate_start) * 1000000)::BIGINT, j.misfire_strategy, "
    "j.routing_strategy, j.block_strategy, j.handler, j.param, j.timeout_ms, "
    "j.fail_retry_count, j.child_job_ids, j.glue_type, j.script_source, j.script_version, "
    "j.enabled, (EXTRACT(EPOCH FROM j.next_fire_at) * 1000000)::BIGINT, "
    "(EXTRACT(EPOCH FROM j.create_time) * 1000000)::BIGINT, "
    "(EXTRACT(EPOCH FROM j.update_time) * 1000000)::BIGINT, j.schedule_error, j.fix_delay_ms, "
    "ARRAY(SELECT l.key || '=' || l.value FROM jsonb_each_text(j.labels) AS l ORDER BY l.key), "
    "j.run_max_age_ms, j.run_keep_last";

namespace {

// Parses a one-dimensional PostgreSQL array of text or numbers.
template <typename Add>
void ParseArray(const pqxx::field& f, Add add) {
  if (f.is_null()) return;
  pqxx::array_parser parser = f.as_array();
  for (auto item = parser.get_next(); item.first != pqxx::array_parser::done;
       item = parser.get_next()) {
    if (item.first == pqxx::array_parser::string_value) add(item.second);
  }
}

// Sets a Timestamp field from a microseconds column. `mutable_field` is called only for a
// non-NULL value: calling a mutable_ accessor marks the field present, and a NULL column
// must leave it unset (not the Unix epoch).
template <typename MutableField>
void SetTime(const pqxx::field& f, MutableField mutable_field) {
  if (!f.is_null()) *mutable_field() = ToProto(FromMicros(f.as<int64_t>()));
}

}  // namespace

jobwheel::v1::Job JobFromRow(const pqxx::row& row, int offset) {
  jobwheel::v1::Job job;
  job.set_id(row[offset + 0].as<int64_t>());
  job.set_app(row[offset + 1].as<std::string>());
  job.set_name(row[offset + 2].as<std::string>());
  job.set_description(row[offset + 3].as<std::string>());
  job.set_owner(row[offset + 4].as<std::string>());
  ParseArray(row[offset + 5], [&](const std::string& s) { job.add_alarm_contacts(s); });
  const std::string kind = row[offset + 6].as<std::string>();
  if (kind == "CRON") {
    auto* cron = job.mutable_schedule()->mutable_cron();
    cron->set_expression(row[offset + 7].as<std::string>());
    cron->set_time_zone(row[offset + 8].as<std::string>());
  } else if (kind == "FIX_RATE") {
    auto* rate = job.mutable_schedule()->mutable_fix_rate();
    rate->set_interval_seconds(row[offset + 9].as<int64_t>());
    SetTime(row[offset + 10], [&] { return rate->mutable_start_time(); });
  } else if (kind == "FIX_DELAY") {
    auto* delay = job.mutable_schedule()->mutable_fix_delay();
    *delay->mutable_delay() = ToProtoDuration(absl::Milliseconds(row[offset + 27].as<int64_t>()));
    SetTime(row[offset + 10], [&] { return delay->mutable_start_time(); });
  } else {
    job.mutable_schedule()->mutable_none();
  }
  job.set_misfire_strategy(static_cast<jobwheel::v1::MisfireStrategy>(row[offset + 11].as<int>()));
  job.set_routing_strategy(static_cast<jobwheel::v1::RoutingStrategy>(row[offset + 12].as<int>()));
  job.set_block_strategy(static_cast<jobwheel::v1::BlockStrategy>(row[offset + 13].as<int>()));
  job.set_handler(row[offset + 14].as<std::string>());
  job.set_param(row[offset + 15].as<std::string>());
  const int64_t timeout_ms = row[offset + 16].as<int64_t>();
  if (timeout_ms > 0) *job.mutable_timeout() = ToProtoDuration(absl::Milliseconds(timeout_ms));
  job.set_fail_retry_count(row[offset + 17].as<int>());
  ParseArray(row[offset + 18], [&](const std::string& s) { job.add_child_job_ids(std::stoll(s)); });
  job.set_glue_type(static_cast<jobwheel::v1::GlueType>(row[offset + 19].as<int>()));
  job.set_script_source(row[offset + 20].as<std::string>());
  job.set_script_version(row[offset + 21].as<int>());
  job.set_enabled(row[offset + 22].as<bool>());
  SetTime(row[offset + 23], [&] { return job.mutable_next_fire_time(); });
  SetTime(row[offset + 24], [&] { return job.mutable_create_time(); });
  SetTime(row[offset + 25], [&] { return job.mutable_update_time(); });
  if (!row[offset + 26].is_null()) job.set_schedule_error(row[offset + 26].as<std::string>());
  return job;
}

jobwheel::v1::Job JobFromAdminRow(const pqxx::row& row) {
  jobwheel::v1::Job job = JobFromRow(row);
  ParseArray(row[28], [&](const std::string& kv) {
    const size_t eq = kv.find('=');  // Keys hold no '='.
    if (eq != std::string::npos) (*job.mutable_labels())[kv.substr(0, eq)] = kv.substr(eq + 1);
  });
  const int64_t max_age_ms = row[29].as<int64_t>();
  const int keep_last = row[30].as<int>();
  if (max_age_ms > 0) {
    *job.mutable_run_retention()->mutable_max_age() =
        ToProtoDuration(absl::Milliseconds(max_age_ms));
  }
  if (keep_last > 0) job.mutable_run_retention()->set_keep_last(keep_last);
  return job;
}

const char* const kRunColumns =
    "r.id, r.fire_id, r.job_id, r.app, r.handler, r.trigger_type, r.attempt, r.shard_index, "
    "r.shard_total, r.executor_address, r.routing_strategy, r.status, r.trigger_message, "
    "r.result_code, r.result_message, r.param, "
    "(EXTRACT(EPOCH FROM r.scheduled_time) * 1000000)::BIGINT, "
    "(EXTRACT(EPOCH FROM r.trigger_time) * 1000000)::BIGINT, "
    "(EXTRACT(EPOCH FROM r.start_time) * 1000000)::BIGINT, "
    "(EXTRACT(EPOCH FROM r.end_time) * 1000000)::BIGINT";

jobwheel::v1::Run RunFromRow(const pqxx::row& row) {
  jobwheel::v1::Run run;
  run.set_id(row[0].as<int64_t>());
  run.set_fire_id(row[1].as<int64_t>());
  run.set_job_id(row[2].as<int64_t>());
  run.set_app(row[3].as<std::string>());
  run.set_handler(row[4].as<std::string>());
  run.set_trigger_type(static_cast<jobwheel::v1::TriggerType>(row[5].as<int>()));
  run.set_attempt(row[6].as<int>());
  run.set_shard_index(row[7].as<int>());
  run.set_shard_total(row[8].as<int>());
  run.set_executor_address(row[9].as<std::string>());
  run.set_routing_strategy(static_cast<jobwheel::v1::RoutingStrategy>(row[10].as<int>()));
  run.set_status(static_cast<jobwheel::v1::RunStatus>(row[11].as<int>()));
  run.set_trigger_message(row[12].as<std::string>());
  run.set_result_code(row[13].as<int>());
  run.set_result_message(row[14].as<std::string>());
  run.set_param(row[15].as<std::string>());
  SetTime(row[16], [&] { return run.mutable_scheduled_time(); });
  SetTime(row[17], [&] { return run.mutable_trigger_time(); });
  SetTime(row[18], [&] { return run.mutable_start_time(); });
  SetTime(row[19], [&] { return run.mutable_end_time(); });
  return run;
}

}  // namespace jobwheel::scheduler
