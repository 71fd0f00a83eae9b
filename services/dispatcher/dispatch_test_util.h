#ifndef JOBWHEEL_SERVICES_DISPATCHER_DISPATCH_TEST_UTIL_H_
#define JOBWHEEL_SERVICES_DISPATCHER_DISPATCH_TEST_UTIL_H_

#include <cstdint>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/time/proto_time.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "pqxx/pqxx"

namespace jobwheel::dispatcher::testing {

// Rows as the scheduler writes them, and reads of the runs table, for PostgreSQL tests.

inline int64_t InsertJob(const std::string& dsn, const std::string& app, const std::string& handler,
                         v1::RoutingStrategy strategy,
                         v1::BlockStrategy block = v1::BLOCK_STRATEGY_SERIAL_EXECUTION,
                         int64_t timeout_ms = 0) {
  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  pqxx::row r = tx.exec1(absl::StrCat(
      "INSERT INTO jobs (app, name, schedule_kind, routing_strategy, block_strategy, handler, "
      "timeout_ms) VALUES (",
      tx.quote(app), ", 'test', 'NONE', ", static_cast<int>(strategy), ", ",
      static_cast<int>(block), ", ", tx.quote(handler), ", ", timeout_ms, ") RETURNING id"));
  tx.commit();
  return r[0].as<int64_t>();
}

inline int64_t InsertFire(const std::string& dsn, int64_t job_id,
                          v1::TriggerType type = v1::TRIGGER_TYPE_MANUAL) {
  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  pqxx::row r =
      tx.exec1(absl::StrCat("INSERT INTO fires (job_id, scheduled_at, trigger_type) VALUES (",
                            job_id, ", now(), ", static_cast<int>(type), ") RETURNING id"));
  tx.commit();
  return r[0].as<int64_t>();
}

inline v1::Job MakeJob(int64_t id, const std::string& app, const std::string& handler,
                       v1::RoutingStrategy strategy,
                       v1::BlockStrategy block = v1::BLOCK_STRATEGY_SERIAL_EXECUTION,
                       absl::Duration timeout = absl::ZeroDuration()) {
  v1::Job job;
  job.set_id(id);
  job.set_app(app);
  job.set_name("test");
  job.set_handler(handler);
  job.set_routing_strategy(strategy);
  job.set_block_strategy(block);
  job.set_glue_type(v1::GLUE_TYPE_HANDLER);
  if (timeout > absl::ZeroDuration()) *job.mutable_timeout() = ToProtoDuration(timeout);
  return job;
}

inline v1::Fire MakeFire(int64_t fire_id, const v1::Job& job, absl::Time scheduled) {
  v1::Fire f;
  f.set_fire_id(fire_id);
  *f.mutable_job() = job;
  f.set_trigger_type(v1::TRIGGER_TYPE_MANUAL);
  *f.mutable_scheduled_time() = ToProto(scheduled);
  return f;
}

struct RunRow {
  int64_t id = 0;
  int status = 0;
  std::string address;
  int shard_index = 0;
  int shard_total = 0;
  std::string trigger_message;
  int result_code = 0;
  std::string result_message;
  bool has_start = false;
  bool has_end = false;
  absl::Time trigger_time;
  std::string late_result;      // RunById only; empty when NULL.
  std::string result_key_hash;  // RunById only (raw bytes); empty when NULL.
};

inline std::vector<RunRow> RunsOf(const std::string& dsn, int64_t fire_id) {
  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  std::vector<RunRow> out;
  for (const auto& r : tx.exec(absl::StrCat(
           "SELECT id, status, executor_address, shard_index, shard_total, trigger_message, "
           "result_code, result_message, start_time IS NOT NULL, end_time IS NOT NULL "
           "FROM runs WHERE fire_id = ",
           fire_id, " ORDER BY shard_index"))) {
    out.push_back(RunRow{r[0].as<int64_t>(), r[1].as<int>(), r[2].as<std::string>(), r[3].as<int>(),
                         r[4].as<int>(), r[5].as<std::string>(), r[6].as<int>(),
                         r[7].as<std::string>(), r[8].as<bool>(), r[9].as<bool>()});
  }
  return out;
}

inline RunRow RunById(const std::string& dsn, int64_t run_id) {
  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  pqxx::row r = tx.exec1(absl::StrCat(
      "SELECT id, status, executor_address, shard_index, shard_total, trigger_message, "
      "result_code, result_message, start_time IS NOT NULL, end_time IS NOT NULL, "
      "(EXTRACT(EPOCH FROM trigger_time) * 1000000)::BIGINT, COALESCE(late_result, ''), "
      "encode(COALESCE(result_key_hash, ''::bytea), 'hex') FROM runs WHERE id = ",
      run_id));
  return RunRow{r[0].as<int64_t>(),
                r[1].as<int>(),
                r[2].as<std::string>(),
                r[3].as<int>(),
                r[4].as<int>(),
                r[5].as<std::string>(),
                r[6].as<int>(),
                r[7].as<std::string>(),
                r[8].as<bool>(),
                r[9].as<bool>(),
                absl::FromUnixMicros(r[10].as<int64_t>()),
                r[11].as<std::string>(),
                absl::HexStringToBytes(r[12].as<std::string>())};
}

// (status, reason, dispatch_time set) of a fire.
inline std::tuple<int, std::string, bool> FireRow(const std::string& dsn, int64_t fire_id) {
  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  pqxx::row r = tx.exec1(absl::StrCat(
      "SELECT status, reason, dispatch_time IS NOT NULL FROM fires WHERE id = ", fire_id));
  return {r[0].as<int>(), r[1].as<std::string>(), r[2].as<bool>()};
}

}  // namespace jobwheel::dispatcher::testing

#endif  // JOBWHEEL_SERVICES_DISPATCHER_DISPATCH_TEST_UTIL_H_
