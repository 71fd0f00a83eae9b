#include "common/base/log_rate_limiter.h"

#include "absl/strings/str_cat.h"

namespace jobwheel {

LogRateLimiter::LogRateLimiter(Options options, const Clock& clock)
    : options_(options), clock_(clock), keys_(options.max_keys) {}

LogRateLimiter::Verdict LogRateLimiter::Admit(absl::string_view key) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  const std::string k(key);
  KeyState* state = keys_.Find(k);
  if (state == nullptr) state = &keys_.Put(k, KeyState());
  if (now - state->last_line < options_.interval) {
    ++state->suppressed;
    return Verdict{};
  }
  if (now - window_start_ >= options_.interval) {
    window_start_ = now;
    window_lines_ = 0;
  }
  if (window_lines_ >= options_.max_lines_per_interval) {
    ++state->suppressed;
    return Verdict{};
  }
  ++window_lines_;
  Verdict v{true, state->suppressed};
  state->suppressed = 0;
  state->last_line = now;
  return v;
}

std::string LogRateLimiter::SuppressedNote(int64_t suppressed) {
  if (suppressed <= 0) return std::string();
  return absl::StrCat(" (", suppressed, " more since the last line)");
}

}  // namespace jobwheel
