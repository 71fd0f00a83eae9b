#include "sdk/internal/script_environment.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace jobwheel::sdk {
namespace {

constexpr const char* kKept[] = {"PATH", "LANG", "LC_ALL", "TZ"};
constexpr absl::string_view kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

}  // namespace

std::vector<std::string> ScriptEnvironment(const char* const* parent, absl::string_view work_dir,
                                           const std::vector<EnvVar>& job_vars) {
  std::vector<std::string> env;
  bool has_path = false;
  for (const char* name : kKept) {
    const size_t len = std::strlen(name);
    for (const char* const* e = parent; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, name, len) == 0 && (*e)[len] == '=') {
        env.emplace_back(*e);
        has_path = has_path || std::strcmp(name, "PATH") == 0;
        break;
      }
    }
  }
  if (!has_path) env.push_back(absl::StrCat("PATH=", kDefaultPath));
  if (!work_dir.empty()) {
    env.push_back(absl::StrCat("HOME=", work_dir));
    env.push_back(absl::StrCat("TMPDIR=", work_dir));
    env.push_back(absl::StrCat("PWD=", work_dir));
  }
  for (const auto& [name, value] : job_vars) env.push_back(absl::StrCat(name, "=", value));
  return env;
}

std::vector<EnvVar> ScriptJobVars(const jobwheel::v1::RunRequest& run) {
  return {
      {"JOBWHEEL_PARAM", run.param()},
      {"JOBWHEEL_JOB_ID", absl::StrCat(run.job_id())},
      {"JOBWHEEL_RUN_ID", absl::StrCat(run.run_id())},
      {"JOBWHEEL_FIRE_ID", absl::StrCat(run.fire_id())},
      {"JOBWHEEL_SHARD_INDEX", absl::StrCat(run.shard_index())},
      {"JOBWHEEL_SHARD_TOTAL", absl::StrCat(run.shard_total())},
      {"JOBWHEEL_ATTEMPT", absl::StrCat(run.attempt())},
  };
}

}  // namespace jobwheel::sdk
