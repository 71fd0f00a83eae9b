#include "common/pg/sql_enums.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/model/proto_enums.h"
#include "google/protobuf/descriptor.h"

namespace jobwheel::sql {
namespace {

// The numbers of `descriptor`'s values that `keep` accepts, ascending, as "(a, b, ...)".
template <typename Enum, typename Keep>
std::string ValuesWhere(const google::protobuf::EnumDescriptor* descriptor, Keep keep) {
  std::vector<int> numbers;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const int n = descriptor->value(i)->number();
    if (keep(static_cast<Enum>(n))) numbers.push_back(n);
  }
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  return absl::StrCat("(", absl::StrJoin(numbers, ", "), ")");
}

}  // namespace

const std::string& OpenRunStatusesSql() {
  static const std::string* sql = new std::string(ValuesWhere<v1::RunStatus>(
      v1::RunStatus_descriptor(), [](v1::RunStatus s) { return IsOpen(s); }));
  return *sql;
}

const std::string& TerminalRunStatusesSql() {
  static const std::string* sql = new std::string(ValuesWhere<v1::RunStatus>(
      v1::RunStatus_descriptor(), [](v1::RunStatus s) { return IsTerminal(s); }));
  return *sql;
}

const std::string& FirstTerminalRunStatusSql() {
  static const std::string* sql = [] {
    const google::protobuf::EnumDescriptor* d = v1::RunStatus_descriptor();
    int first = -1;
    for (int i = 0; i < d->value_count(); ++i) {
      const int n = d->value(i)->number();
      if (IsTerminal(static_cast<v1::RunStatus>(n)) && (first < 0 || n < first)) first = n;
    }
    return new std::string(absl::StrCat(first));
  }();
  return *sql;
}

const std::string& FailedRunStatusesSql() {
  static const std::string* sql = new std::string(
      SqlIntList({v1::RUN_STATUS_FAILED, v1::RUN_STATUS_TIMED_OUT, v1::RUN_STATUS_LOST}));
  return *sql;
}

const std::string& ScheduleTriggerTypesSql() {
  static const std::string* sql = new std::string(
      SqlIntList({v1::TRIGGER_TYPE_CRON, v1::TRIGGER_TYPE_FIX_RATE, v1::TRIGGER_TYPE_MISFIRE}));
  return *sql;
}

const std::string& OnDemandTriggerTypesSql() {
  static const std::string* sql = new std::string(
      SqlIntList({v1::TRIGGER_TYPE_MANUAL, v1::TRIGGER_TYPE_RETRY, v1::TRIGGER_TYPE_PARENT}));
  return *sql;
}

std::string AddressTypeSqlName(v1::AddressType type) {
  return ShortEnumName(
      v1::AddressType_Name(type == v1::ADDRESS_TYPE_MANUAL ? type : v1::ADDRESS_TYPE_AUTO),
      "ADDRESS_TYPE_");
}

v1::AddressType AddressTypeFromSqlName(absl::string_view name) {
  return name == AddressTypeSqlName(v1::ADDRESS_TYPE_MANUAL) ? v1::ADDRESS_TYPE_MANUAL
                                                             : v1::ADDRESS_TYPE_AUTO;
}

}  // namespace jobwheel::sql
