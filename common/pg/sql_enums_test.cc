#include "common/pg/sql_enums.h"

#include <set>
#include <string>
#include <vector>

#include "common/model/proto_enums.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"

namespace jobwheel::sql {
namespace {

// Every number of an enum, ascending.
std::vector<int> Numbers(const google::protobuf::EnumDescriptor* d) {
  std::set<int> out;
  for (int i = 0; i < d->value_count(); ++i) out.insert(d->value(i)->number());
  return {out.begin(), out.end()};
}

// Stored rows hold these numbers: a proto value renumbered would reinterpret every row written
// before. Each line pins the number the database holds for a named value.
TEST(SqlEnumsTest, StoredNumbersNeverChange) {
  EXPECT_EQ(SqlInt(v1::RUN_STATUS_PENDING), "1");
  EXPECT_EQ(SqlInt(v1::RUN_STATUS_RUNNING), "2");
  EXPECT_EQ(SqlInt(v1::RUN_STATUS_SUCCEEDED), "3");
  EXPECT_EQ(SqlInt(v1::RUN_STATUS_FAILED), "4");
  EXPECT_EQ(SqlInt(v1::RUN_STATUS_TIMED_OUT), "5");
  EXPECT_EQ(SqlInt(v1::RUN_STATUS_KILLED), "6");
  EXPECT_EQ(SqlInt(v1::RUN_STATUS_LOST), "7");
  EXPECT_EQ(SqlInt(v1::RUN_STATUS_DISCARDED), "8");

  EXPECT_EQ(SqlInt(v1::FIRE_STATUS_PENDING), "1");
  EXPECT_EQ(SqlInt(v1::FIRE_STATUS_DISPATCHED), "2");
  EXPECT_EQ(SqlInt(v1::FIRE_STATUS_SKIPPED), "3");
  EXPECT_EQ(SqlInt(v1::FIRE_STATUS_FAILED), "4");

  EXPECT_EQ(SqlInt(v1::TRIGGER_TYPE_CRON), "1");
  EXPECT_EQ(SqlInt(v1::TRIGGER_TYPE_FIX_RATE), "2");
  EXPECT_EQ(SqlInt(v1::TRIGGER_TYPE_MANUAL), "3");
  EXPECT_EQ(SqlInt(v1::TRIGGER_TYPE_MISFIRE), "4");
  EXPECT_EQ(SqlInt(v1::TRIGGER_TYPE_RETRY), "5");
  EXPECT_EQ(SqlInt(v1::TRIGGER_TYPE_PARENT), "6");

  EXPECT_EQ(SqlInt(v1::GLUE_TYPE_HANDLER), "1");
  EXPECT_EQ(SqlInt(v1::GLUE_TYPE_SCRIPT_SHELL), "2");
  EXPECT_EQ(SqlInt(v1::GLUE_TYPE_SCRIPT_PYTHON), "3");

  EXPECT_EQ(SqlInt(v1::MISFIRE_STRATEGY_DO_NOTHING), "1");
  EXPECT_EQ(SqlInt(v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW), "2");

  EXPECT_EQ(SqlInt(v1::BLOCK_STRATEGY_SERIAL_EXECUTION), "1");
  EXPECT_EQ(SqlInt(v1::BLOCK_STRATEGY_DISCARD_LATER), "2");
  EXPECT_EQ(SqlInt(v1::BLOCK_STRATEGY_COVER_EARLY), "3");

  EXPECT_EQ(SqlInt(v1::ROUTING_STRATEGY_FIRST), "1");
  EXPECT_EQ(SqlInt(v1::ROUTING_STRATEGY_SHARDING_BROADCAST), "10");
  // Every routing strategy keeps its place: 1..10 in declaration order.
  EXPECT_EQ(Numbers(v1::RoutingStrategy_descriptor()),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
}

TEST(SqlEnumsTest, RunStatusLists) {
  EXPECT_EQ(OpenRunStatusesSql(), "(1, 2)");
  EXPECT_EQ(OpenRunStatusesSql(), SqlIntList({v1::RUN_STATUS_PENDING, v1::RUN_STATUS_RUNNING}));
  EXPECT_EQ(TerminalRunStatusesSql(), "(3, 4, 5, 6, 7, 8)");
  EXPECT_EQ(TerminalRunStatusesSql(),
            SqlIntList({v1::RUN_STATUS_SUCCEEDED, v1::RUN_STATUS_FAILED, v1::RUN_STATUS_TIMED_OUT,
                        v1::RUN_STATUS_KILLED, v1::RUN_STATUS_LOST, v1::RUN_STATUS_DISCARDED}));
  EXPECT_EQ(FirstTerminalRunStatusSql(), "3");
  EXPECT_EQ(FirstTerminalRunStatusSql(), SqlInt(v1::RUN_STATUS_SUCCEEDED));
  EXPECT_EQ(FailedRunStatusesSql(), "(4, 5, 7)");
}

// `status >= FirstTerminalRunStatusSql()` stands for the terminal statuses (runs_followup and
// the queries that use it): it holds only while no open or new non-terminal status is numbered
// above a terminal one.
TEST(SqlEnumsTest, TerminalStatusesAreExactlyThoseFromTheFirstUp) {
  const int first = std::stoi(FirstTerminalRunStatusSql());
  for (int n : Numbers(v1::RunStatus_descriptor())) {
    EXPECT_EQ(IsTerminal(static_cast<v1::RunStatus>(n)), n >= first) << v1::RunStatus_Name(n);
  }
}

TEST(SqlEnumsTest, FailedStatusesAreTerminal) {
  for (v1::RunStatus s : {v1::RUN_STATUS_FAILED, v1::RUN_STATUS_TIMED_OUT, v1::RUN_STATUS_LOST}) {
    EXPECT_TRUE(IsTerminal(s)) << v1::RunStatus_Name(s);
  }
}

// A new trigger type must be classed as schedule-driven (unique per job and time) or on
// demand before it can be stored.
TEST(SqlEnumsTest, TriggerTypesArePartitioned) {
  EXPECT_EQ(ScheduleTriggerTypesSql(), "(1, 2, 4)");
  EXPECT_EQ(OnDemandTriggerTypesSql(), "(3, 5, 6)");
  std::set<int> classed;
  for (const std::string* list : {&ScheduleTriggerTypesSql(), &OnDemandTriggerTypesSql()}) {
    std::string digits;
    for (char c : *list + ")") {
      if (c >= '0' && c <= '9') {
        digits.push_back(c);
      } else if (!digits.empty()) {
        EXPECT_TRUE(classed.insert(std::stoi(digits)).second) << "classed twice: " << digits;
        digits.clear();
      }
    }
  }
  std::set<int> all;
  for (int n : Numbers(v1::TriggerType_descriptor())) {
    if (n != v1::TRIGGER_TYPE_UNSPECIFIED) all.insert(n);
  }
  EXPECT_EQ(classed, all);
}

TEST(SqlEnumsTest, SqlIntList) {
  EXPECT_EQ(SqlIntList({v1::GLUE_TYPE_SCRIPT_SHELL}), "(2)");
  EXPECT_EQ(SqlIntList({v1::FIRE_STATUS_SKIPPED, v1::FIRE_STATUS_FAILED}), "(3, 4)");
}

TEST(SqlEnumsTest, AddressTypeNames) {
  EXPECT_EQ(AddressTypeSqlName(v1::ADDRESS_TYPE_AUTO), "AUTO");
  EXPECT_EQ(AddressTypeSqlName(v1::ADDRESS_TYPE_MANUAL), "MANUAL");
  EXPECT_EQ(AddressTypeSqlName(v1::ADDRESS_TYPE_UNSPECIFIED), "AUTO");
  EXPECT_EQ(AddressTypeFromSqlName("MANUAL"), v1::ADDRESS_TYPE_MANUAL);
  EXPECT_EQ(AddressTypeFromSqlName("AUTO"), v1::ADDRESS_TYPE_AUTO);
  EXPECT_EQ(AddressTypeFromSqlName("manual"), v1::ADDRESS_TYPE_AUTO);
  EXPECT_EQ(AddressTypeFromSqlName(""), v1::ADDRESS_TYPE_AUTO);
}

}  // namespace
}  // namespace jobwheel::sql
