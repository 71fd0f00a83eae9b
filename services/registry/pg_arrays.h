#ifndef JOBWHEEL_SERVICES_REGISTRY_PG_ARRAYS_H_
#define JOBWHEEL_SERVICES_REGISTRY_PG_ARRAYS_H_

#include <string>
#include <vector>

#include "pqxx/pqxx"

namespace jobwheel::registry {

// A PostgreSQL array literal of quoted, escaped elements: {"a","b\"c"}. Pass it
// as a text parameter and cast it in SQL ($1::text[]).
std::string ToPgArray(const std::vector<std::string>& values);

// Reads a one-dimensional text[] column (NULL elements become "").
std::vector<std::string> FromPgArray(const pqxx::field& field);

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_PG_ARRAYS_H_
