#ifndef JOBWHEEL_COMMON_TESTING_CALLER_KEYS_H_
#define JOBWHEEL_COMMON_TESTING_CALLER_KEYS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

// The scheduler's and the dispatchers' Ed25519 key pairs as files, for tests that start the
// real binaries (what scripts/up makes with `openssl genpkey -algorithm ed25519`), and the
// flags each binary takes to use them.
namespace jobwheel::testing {

struct CallerKeyFiles {
  std::string scheduler_key;   // Private (PEM), the scheduler's --signing_key_file.
  std::string scheduler_pub;   // Public (PEM).
  std::string dispatcher_key;  // Private, the dispatchers' --signing_key_file.
  std::string dispatcher_pub;  // Public.

  // --signing_key_file.
  std::vector<std::string> SchedulerFlags() const;
  // --signing_key_file, --scheduler_public_key_file.
  std::vector<std::string> DispatcherFlags() const;
  // --dispatcher_public_key_file.
  std::vector<std::string> RegistryFlags() const;
  // --dispatcher_public_key_file, --scheduler_public_key_file (demo or bench executor).
  std::vector<std::string> ExecutorFlags() const;
};

// Generates both key pairs into `dir` (files scheduler.key, scheduler.pub, dispatcher.key,
// dispatcher.pub, created 0600).
absl::StatusOr<CallerKeyFiles> WriteCallerKeys(const std::string& dir);

// A caller token for `audience` signed with the private key in `private_key_file` as
// `issuer` (valid 60 s from now).
absl::StatusOr<std::string> SignCallerToken(const std::string& private_key_file,
                                            absl::string_view issuer, absl::string_view audience);

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_CALLER_KEYS_H_
