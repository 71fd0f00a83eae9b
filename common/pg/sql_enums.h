#ifndef JOBWHEEL_COMMON_PG_SQL_ENUMS_H_
#define JOBWHEEL_COMMON_PG_SQL_ENUMS_H_

#include <initializer_list>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "jobwheel/v1/types.pb.h"

// The SQL text of the enum values the schema stores, so that a statement names a value through
// its proto constant and never as a bare number.
//
// Integer columns hold the proto enum's number: jobs.misfire_strategy (MisfireStrategy),
// jobs.routing_strategy and runs.routing_strategy (RoutingStrategy), jobs.block_strategy
// (BlockStrategy), jobs.glue_type and scripts.glue_type (GlueType), fires.trigger_type and
// runs.trigger_type (TriggerType), fires.status (FireStatus), runs.status (RunStatus). Stored
// rows keep these numbers, so a proto value is never renumbered. Text columns hold the proto
// value's name without its type prefix: apps.address_type (AddressType), tokens.role (Role).
// jobs.schedule_kind has no proto enum (Job.schedule is a oneof): its names are below.
//
// common/pg/migrations_test checks the schema (column defaults, partial-index predicates, CHECK
// constraints) against these values; common/pg/sql_enums_test pins the numbers.
namespace jobwheel::sql {

// An enum value as an SQL integer literal: SqlInt(v1::RUN_STATUS_KILLED) is "6".
template <typename Enum>
std::string SqlInt(Enum value) {
  static_assert(std::is_enum<Enum>::value, "SqlInt takes an enum value");
  return absl::StrCat(static_cast<int>(value));
}

// Enum values as a parenthesized SQL list for IN: SqlIntList({v1::RUN_STATUS_PENDING,
// v1::RUN_STATUS_RUNNING}) is "(1, 2)". The list must not be empty.
template <typename Enum>
std::string SqlIntList(std::initializer_list<Enum> values) {
  static_assert(std::is_enum<Enum>::value, "SqlIntList takes enum values");
  std::string out = "(";
  for (Enum v : values) {
    if (out.size() > 1) out += ", ";
    absl::StrAppend(&out, static_cast<int>(v));
  }
  out += ")";
  return out;
}

// runs.status

// "(1, 2)": PENDING and RUNNING, the statuses IsOpen accepts. Also the predicate of the
// partial index runs_open, so a query written with it can use that index.
const std::string& OpenRunStatusesSql();

// "(3, 4, 5, 6, 7, 8)": every status IsTerminal accepts (a run that will not change any more).
const std::string& TerminalRunStatusesSql();

// "3": the lowest terminal status. Every RunStatus from it up is terminal and every one below
// is not (sql_enums_test checks it), so `status >= 3` is the same set as TerminalRunStatusesSql
// and is the predicate of the partial index runs_followup.
const std::string& FirstTerminalRunStatusSql();

// "(4, 5, 7)": FAILED, TIMED_OUT, LOST: the terminal runs that are retried and, once their
// retries are spent, alarm (the same set as the scheduler's RunFailed).
const std::string& FailedRunStatusesSql();

// fires.trigger_type and runs.trigger_type

// "(1, 2, 4)": CRON, FIX_RATE, MISFIRE: fires the leader writes from a job's schedule, at most
// one per job and scheduled time (the predicate of the unique index fires_schedule_once).
const std::string& ScheduleTriggerTypesSql();

// "(3, 5, 6)": MANUAL, RETRY, PARENT: fires written due now() on demand. With
// ScheduleTriggerTypesSql, every TriggerType but UNSPECIFIED (sql_enums_test checks it).
const std::string& OnDemandTriggerTypesSql();

// apps.address_type

// The value's proto name without "ADDRESS_TYPE_": "AUTO" or "MANUAL" (UNSPECIFIED is stored as
// "AUTO", as which it is treated).
std::string AddressTypeSqlName(v1::AddressType type);

// The stored name back: "MANUAL" is MANUAL, anything else AUTO.
v1::AddressType AddressTypeFromSqlName(absl::string_view name);

// jobs.schedule_kind: which field of Job.schedule is set. The values exist only in the database
// (the proto has a oneof, not an enum); the CHECK constraint on the column admits these four.
inline constexpr char kScheduleKindCron[] = "CRON";           // schedule.cron
inline constexpr char kScheduleKindFixRate[] = "FIX_RATE";    // schedule.fix_rate
inline constexpr char kScheduleKindFixDelay[] = "FIX_DELAY";  // schedule.fix_delay
inline constexpr char kScheduleKindNone[] = "NONE";           // neither: manual triggers only

}  // namespace jobwheel::sql

#endif  // JOBWHEEL_COMMON_PG_SQL_ENUMS_H_
