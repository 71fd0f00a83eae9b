#ifndef JOBWHEEL_COMMON_AUDIT_AUDIT_FILTER_H_
#define JOBWHEEL_COMMON_AUDIT_AUDIT_FILTER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace jobwheel {

// What ListAuditEvents reads (exact matches; empty: all).
struct AuditFilter {
  std::string actor;
  std::string target;
  std::string action;
  std::optional<absl::Time> from;    // time >= this.
  std::optional<absl::Time> before;  // time < this.
  // Set: only events of these apps (the caller's token scope); an empty list matches nothing.
  std::optional<std::vector<std::string>> only_apps;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUDIT_AUDIT_FILTER_H_
