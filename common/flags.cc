#include "common/flags.h"

#include <cstdlib>
#include <iostream>

#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"

namespace jobwheel {

std::vector<char*> ParseFlagsWithEnv(int argc, char** argv, const std::string& usage) {
  absl::SetProgramUsageMessage(usage);
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const std::string env = "JOBWHEEL_" + absl::AsciiStrToUpper(name);
    const char* value = std::getenv(env.c_str());
    if (value == nullptr) continue;
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      std::cerr << "invalid " << env << ": " << error << "\n";
      std::exit(2);
    }
  }
  return absl::ParseCommandLine(argc, argv);
}

}  // namespace jobwheel
