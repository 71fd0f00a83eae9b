#ifndef JOBWHEEL_SERVICES_DISPATCHER_RESULT_KEY_H_
#define JOBWHEEL_SERVICES_DISPATCHER_RESULT_KEY_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace jobwheel::dispatcher {

// A run's result key: a per-run secret sent to its executor in RunRequest.result_key, which
// must come back in the run's RunResult. Only its SHA-256 is stored (runs.result_key_hash), so
// the database never holds what an executor could present. Keys are never logged.
inline constexpr size_t kResultKeyBytes = 32;

// kResultKeyBytes bytes from OpenSSL's CSPRNG. Aborts if the generator fails (a dispatcher
// that cannot make secrets must not hand out guessable ones).
std::string NewResultKey();

// SHA-256 of `key` (32 raw bytes).
std::string ResultKeyHash(absl::string_view key);

// Whether SHA-256(key) equals `hash`, compared in constant time.
bool ResultKeyMatches(absl::string_view key, absl::string_view hash);

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_RESULT_KEY_H_
