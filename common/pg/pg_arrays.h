#ifndef JOBWHEEL_COMMON_PG_PG_ARRAYS_H_
#define JOBWHEEL_COMMON_PG_PG_ARRAYS_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/time/proto_time.h"
#include "pqxx/pqxx"

namespace jobwheel {

// PostgreSQL array literals for passing a column of values as one parameter (unnest()-ed or
// compared with `= ANY`): one statement text and one round trip whatever the number of rows.

// {"a","b"}: every element quoted and escaped.
std::string ToPgArray(const std::vector<std::string>& values);
// The same from any other container of strings (e.g. a protobuf RepeatedPtrField).
template <typename Strings>
std::string ToPgArray(const Strings& values) {
  return ToPgArray(std::vector<std::string>(values.begin(), values.end()));
}

// {1,2,3} from any container of integers (std::vector, protobuf RepeatedField).
template <typename Ints>
std::string ToPgIntArray(const Ints& values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

// {"2026-01-02 03:04:05.678901+00",NULL}: an empty optional (absl:: or std::) is NULL.
template <typename OptionalTime>
std::string ToPgTimeArray(const std::vector<OptionalTime>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    if (values[i].has_value()) {
      absl::StrAppend(&out, "\"", ToPgTimestamp(*values[i]), "\"");
    } else {
      out += "NULL";
    }
  }
  out.push_back('}');
  return out;
}

// A text[] column's elements (NULL elements become empty strings; a NULL array, none).
std::vector<std::string> FromPgArray(const pqxx::field& field);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_PG_PG_ARRAYS_H_
