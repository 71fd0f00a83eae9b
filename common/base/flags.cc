#include "common/base/flags.h"

#include <cstdlib>
#include <iostream>

#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"

namespace jobwheel {

bool IsCommandLineOnlyFlag(absl::string_view name) { return name == "insecure_dev"; }

std::vector<char*> ParseFlagsWithEnv(int argc, char** argv, const std::string& usage) {
  absl::SetProgramUsageMessage(usage);
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const std::string env = "JOBWHEEL_" + absl::AsciiStrToUpper(name);
    const char* value = std::getenv(env.c_str());
    if (value == nullptr) continue;
    if (IsCommandLineOnlyFlag(name)) {
      std::cerr << env << " is set, but --" << name
                << " is taken only from the command line (an environment variable must not "
                   "turn authentication off); unset "
                << env << " and pass --" << name << " if you mean it\n";
      std::exit(2);
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      std::cerr << "invalid " << env << ": " << error << "\n";
      std::exit(2);
    }
  }
  return absl::ParseCommandLine(argc, argv);
}

}  // namespace jobwheel
