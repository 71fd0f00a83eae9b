#include "common/pg/pg_arrays.h"

namespace jobwheel {

std::string ToPgArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

std::vector<std::string> FromPgArray(const pqxx::field& field) {
  std::vector<std::string> out;
  if (field.is_null()) return out;
  pqxx::array_parser parser = field.as_array();
  while (true) {
    auto [juncture, value] = parser.get_next();
    if (juncture == pqxx::array_parser::done) break;
    if (juncture == pqxx::array_parser::string_value) out.push_back(std::move(value));
    if (juncture == pqxx::array_parser::null_value) out.emplace_back();
  }
  return out;
}

}  // namespace jobwheel
