// The schema as a contract with the proto enums: the values its CHECK constraints admit, its
// column defaults and its partial-index predicates must be those that common/pg/sql_enums builds
// from the generated enum constants, or statements and stored rows drift apart from the model.
#include "common/pg/migrations.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/model/proto_enums.h"
#include "common/pg/sql_enums.h"
#include "common/testing/pg_test_db.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/token_admin.pb.h"
#include "jobwheel/v1/types.pb.h"
#include "pqxx/pqxx"

namespace jobwheel {
namespace {

using sql::SqlInt;

// Every value name of an enum but UNSPECIFIED (number 0), without `prefix`, in declaration order.
std::vector<std::string> StoredNames(const google::protobuf::EnumDescriptor* d,
                                     absl::string_view prefix) {
  std::vector<std::string> out;
  for (int i = 0; i < d->value_count(); ++i) {
    if (d->value(i)->number() == 0) continue;
    out.push_back(ShortEnumName(d->value(i)->name(), prefix));
  }
  return out;
}

// "('A', 'B')".
std::string SqlTextList(const std::vector<std::string>& names) {
  return absl::StrCat("('", absl::StrJoin(names, "', '"), "')");
}

class MigrationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    conn_ = std::make_unique<pqxx::connection>(*dsn);
  }

  // The predicate of a partial index, as PostgreSQL prints it.
  static std::string IndexPredicate(pqxx::work& tx, const std::string& index) {
    return tx
        .exec_params1(
            "SELECT pg_get_expr(indpred, indrelid) FROM pg_index "
            "WHERE indexrelid = $1::regclass",
            index)[0]
        .as<std::string>();
  }

  // What PostgreSQL makes of `predicate` as an index predicate on `table` (the probe index is
  // rolled back with `tx`): the same text as IndexPredicate of an index written with it.
  static std::string ProbePredicate(pqxx::work& tx, const std::string& table,
                                    const std::string& predicate) {
    tx.exec(absl::StrCat("CREATE INDEX drift_probe ON ", table, " (id) WHERE ", predicate));
    const std::string out = IndexPredicate(tx, "drift_probe");
    tx.exec("DROP INDEX drift_probe");
    return out;
  }

  static std::string ConstraintDef(pqxx::work& tx, const std::string& table,
                                   const std::string& name) {
    pqxx::result r = tx.exec_params(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = $1::regclass AND conname = $2 AND contype = 'c'",
        table, name);
    return r.empty() ? std::string("(no such constraint)") : r[0][0].as<std::string>();
  }

  // What PostgreSQL makes of `check` as a CHECK constraint on `table` (rolled back with `tx`).
  static std::string ProbeCheck(pqxx::work& tx, const std::string& table,
                                const std::string& check) {
    tx.exec(absl::StrCat("ALTER TABLE ", table, " ADD CONSTRAINT drift_probe CHECK (", check,
                         ") NOT VALID"));
    const std::string out = ConstraintDef(tx, table, "drift_probe");
    tx.exec(absl::StrCat("ALTER TABLE ", table, " DROP CONSTRAINT drift_probe"));
    absl::string_view def = out;
    absl::ConsumeSuffix(&def, " NOT VALID");  // The probe's, not part of what it admits.
    return std::string(def);
  }

  static std::string ColumnDefault(pqxx::work& tx, const std::string& table,
                                   const std::string& column) {
    pqxx::result r = tx.exec_params(
        "SELECT column_default FROM information_schema.columns "
        "WHERE table_schema = 'public' AND table_name = $1 AND column_name = $2",
        table, column);
    if (r.empty() || r[0][0].is_null()) return "(none)";
    return r[0][0].as<std::string>();
  }

  // Whether `insert` (one row, `value` as $1) passes the table's CHECK constraints; the row
  // is rolled back either way. Any other error fails the test.
  static bool Admits(pqxx::work& tx, const std::string& insert, const std::string& value) {
    tx.exec("SAVEPOINT admits");
    bool admitted = true;
    try {
      tx.exec_params(insert, value);
    } catch (const pqxx::check_violation&) {
      admitted = false;
    }
    tx.exec("ROLLBACK TO SAVEPOINT admits");
    return admitted;
  }

  std::unique_ptr<pqxx::connection> conn_;
};

TEST_F(MigrationsTest, ReachesTheLatestVersionAndIsIdempotent) {
  ASSERT_TRUE(ApplyMigrations(*conn_).ok());
  ASSERT_TRUE(ApplyMigrations(*conn_).ok());
  pqxx::work tx(*conn_);
  pqxx::row r = tx.exec1("SELECT max(version), count(*) FROM schema_version");
  EXPECT_EQ(r[0].as<int>(), LatestSchemaVersion());
  EXPECT_EQ(r[1].as<int>(), LatestSchemaVersion());
}

// A row written without the column gets the value the model treats as the default.
TEST_F(MigrationsTest, EnumColumnDefaultsAreTheProtoDefaults) {
  pqxx::work tx(*conn_);
  EXPECT_EQ(ColumnDefault(tx, "fires", "status"), SqlInt(v1::FIRE_STATUS_PENDING));
  EXPECT_EQ(ColumnDefault(tx, "runs", "status"), SqlInt(v1::RUN_STATUS_PENDING));
  EXPECT_EQ(ColumnDefault(tx, "runs", "routing_strategy"), SqlInt(v1::ROUTING_STRATEGY_FIRST));
  EXPECT_EQ(ColumnDefault(tx, "jobs", "routing_strategy"), SqlInt(v1::ROUTING_STRATEGY_FIRST));
  EXPECT_EQ(ColumnDefault(tx, "jobs", "misfire_strategy"), SqlInt(v1::MISFIRE_STRATEGY_DO_NOTHING));
  EXPECT_EQ(ColumnDefault(tx, "jobs", "block_strategy"),
            SqlInt(v1::BLOCK_STRATEGY_SERIAL_EXECUTION));
  EXPECT_EQ(ColumnDefault(tx, "jobs", "glue_type"), SqlInt(v1::GLUE_TYPE_HANDLER));
  // No default: every writer names the trigger type and the script's glue type.
  EXPECT_EQ(ColumnDefault(tx, "fires", "trigger_type"), "(none)");
  EXPECT_EQ(ColumnDefault(tx, "runs", "trigger_type"), "(none)");
  EXPECT_EQ(ColumnDefault(tx, "scripts", "glue_type"), "(none)");
  EXPECT_EQ(ColumnDefault(tx, "apps", "address_type"),
            absl::StrCat("'", sql::AddressTypeSqlName(v1::ADDRESS_TYPE_AUTO), "'::text"));
}

// The queries use these indexes only when their predicates imply the index's: each predicate
// must be the one the statements build from sql_enums.
TEST_F(MigrationsTest, PartialIndexPredicatesAreTheSqlEnumSets) {
  pqxx::work tx(*conn_);
  EXPECT_EQ(IndexPredicate(tx, "fires_schedule_once"),
            ProbePredicate(tx, "fires", "trigger_type IN " + sql::ScheduleTriggerTypesSql()));
  EXPECT_EQ(IndexPredicate(tx, "fires_pending"),
            ProbePredicate(tx, "fires", "status = " + SqlInt(v1::FIRE_STATUS_PENDING)));
  EXPECT_EQ(IndexPredicate(tx, "runs_open"),
            ProbePredicate(tx, "runs", "status IN " + sql::OpenRunStatusesSql()));
  EXPECT_EQ(IndexPredicate(tx, "runs_followup"),
            ProbePredicate(tx, "runs",
                           "NOT followup_done AND status >= " + sql::FirstTerminalRunStatusSql()));
  // The probe is no tautology: another set prints differently.
  EXPECT_NE(IndexPredicate(tx, "runs_open"),
            ProbePredicate(tx, "runs", "status IN " + sql::TerminalRunStatusesSql()));
}

// apps.address_type admits exactly the AddressType names (UNSPECIFIED is stored as AUTO).
TEST_F(MigrationsTest, AddressTypeCheckAdmitsExactlyTheProtoNames) {
  const std::vector<std::string> names = StoredNames(v1::AddressType_descriptor(), "ADDRESS_TYPE_");
  ASSERT_EQ(names, (std::vector<std::string>{sql::AddressTypeSqlName(v1::ADDRESS_TYPE_AUTO),
                                             sql::AddressTypeSqlName(v1::ADDRESS_TYPE_MANUAL)}));
  pqxx::work tx(*conn_);
  EXPECT_EQ(ConstraintDef(tx, "apps", "apps_address_type_check"),
            ProbeCheck(tx, "apps", "address_type IN " + SqlTextList(names)));
  const std::string insert = "INSERT INTO apps (name, address_type) VALUES ('probe', $1)";
  for (const std::string& name : names) EXPECT_TRUE(Admits(tx, insert, name)) << name;
  for (const char* bad : {"UNSPECIFIED", "ADDRESS_TYPE_AUTO", "auto", ""}) {
    EXPECT_FALSE(Admits(tx, insert, bad)) << bad;
  }
}

// tokens.role admits exactly the Role names the token store writes and reads.
TEST_F(MigrationsTest, RoleCheckAdmitsExactlyTheProtoNames) {
  const std::vector<std::string> names = StoredNames(v1::Role_descriptor(), "ROLE_");
  ASSERT_EQ(names, (std::vector<std::string>{"ADMIN", "OPERATOR", "VIEWER", "EXECUTOR"}));
  pqxx::work tx(*conn_);
  EXPECT_EQ(ConstraintDef(tx, "tokens", "tokens_role_check"),
            ProbeCheck(tx, "tokens", "role IN " + SqlTextList(names)));
  const std::string insert =
      absl::StrCat("INSERT INTO tokens (name, role, secret_hash) VALUES ('probe', $1, '",
                   std::string(64, 'a'), "')");
  for (const std::string& name : names) EXPECT_TRUE(Admits(tx, insert, name)) << name;
  for (const char* bad : {"UNSPECIFIED", "CLUSTER", "admin", ""}) {
    EXPECT_FALSE(Admits(tx, insert, bad)) << bad;
  }
}

// jobs.schedule_kind exists only in the database: it admits exactly sql_enums' four names.
TEST_F(MigrationsTest, ScheduleKindCheckAdmitsExactlyTheNamedKinds) {
  const std::vector<std::string> kinds = {sql::kScheduleKindCron, sql::kScheduleKindFixRate,
                                          sql::kScheduleKindFixDelay, sql::kScheduleKindNone};
  pqxx::work tx(*conn_);
  EXPECT_EQ(ConstraintDef(tx, "jobs", "jobs_schedule_kind_check"),
            ProbeCheck(tx, "jobs", "schedule_kind IN " + SqlTextList(kinds)));
  const std::string insert = "INSERT INTO jobs (app, name, schedule_kind) VALUES ('a', 'j', $1)";
  for (const std::string& kind : kinds) EXPECT_TRUE(Admits(tx, insert, kind)) << kind;
  for (const char* bad : {"MANUAL", "cron", ""}) EXPECT_FALSE(Admits(tx, insert, bad)) << bad;
}

// The integer enum columns have no CHECK constraint (see migrations.cc): a value is checked
// where it enters (job validation, the dispatcher's request validation), not by failing a
// whole batched statement. If one is added, its allowed values must be the proto's: extend
// this test with the same probe as above.
TEST_F(MigrationsTest, IntegerEnumColumnsHaveNoCheckConstraint) {
  pqxx::work tx(*conn_);
  pqxx::result r = tx.exec(
      "SELECT conrelid::regclass::text || ': ' || pg_get_constraintdef(oid) FROM pg_constraint "
      "WHERE contype = 'c' AND conrelid IN ('jobs'::regclass, 'scripts'::regclass, "
      "'fires'::regclass, 'runs'::regclass) AND pg_get_constraintdef(oid) ~ "
      "'(status|trigger_type|glue_type|routing_strategy|misfire_strategy|block_strategy)'");
  for (const pqxx::row& row : r) ADD_FAILURE() << "unchecked by this test: " << row[0].c_str();
}

}  // namespace
}  // namespace jobwheel
