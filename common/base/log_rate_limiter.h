#ifndef JOBWHEEL_COMMON_BASE_LOG_RATE_LIMITER_H_
#define JOBWHEEL_COMMON_BASE_LOG_RATE_LIMITER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/lru_map.h"
#include "common/time/clock.h"

namespace jobwheel {

// Decides which log lines about events a client can cause (refused requests, failed
// authentications) are written, so that no client can flood the log: at most one line per key
// (the client's address) per `interval`, carrying how many of that key's events were not
// written since its previous line, and at most `max_lines_per_interval` lines for all keys
// together (many addresses cannot flood it either). At most `max_keys` keys are remembered
// (least recently seen forgotten first, with their counts). Thread-safe.
class LogRateLimiter {
 public:
  struct Options {
    absl::Duration interval = absl::Seconds(10);
    size_t max_lines_per_interval = 100;
    size_t max_keys = 10000;
  };
  // What to do with one event.
  struct Verdict {
    bool log = false;        // Write this event's line now.
    int64_t suppressed = 0;  // When `log`: the key's events not written since its last line.
  };

  LogRateLimiter(Options options, const Clock& clock);

  Verdict Admit(absl::string_view key);

  // "" for 0, else " (N more since the last line)": what a written line appends.
  static std::string SuppressedNote(int64_t suppressed);

 private:
  struct KeyState {
    absl::Time last_line = absl::InfinitePast();
    int64_t suppressed = 0;
  };

  const Options options_;
  const Clock& clock_;
  absl::Mutex mu_;
  LruMap<std::string, KeyState> keys_ ABSL_GUARDED_BY(mu_);
  absl::Time window_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  size_t window_lines_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_BASE_LOG_RATE_LIMITER_H_
