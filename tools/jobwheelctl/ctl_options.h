#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_CTL_OPTIONS_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_CTL_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"

namespace jobwheel::ctl {

// jobwheelctl's flags as main.cc parsed them (see the flag help there for each one).
struct CtlOptions {
  std::string scheduler;
  std::string registry;
  bool json = false;
  std::string app;
  std::string labels;  // `jobs list`: ListJobsRequest.label_selector.
  int64_t job = 0;
  std::string param;
  std::string file;
  int limit = 20;
  std::string name;
  std::string role;
  std::string apps;
  absl::Duration expire_in = absl::ZeroDuration();
  bool include_revoked = false;
  absl::Duration bucket = absl::Hours(1);
  absl::Duration since = absl::ZeroDuration();
  bool apply = false;
  std::string app_map;
  std::string time_zone;
  std::string actor;
  std::string target;
  std::string action;
  std::string reason;  // `executors drain`.
};

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_CTL_OPTIONS_H_
