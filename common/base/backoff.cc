#include "common/base/backoff.h"

#include <algorithm>

#include "absl/random/distributions.h"

namespace jobwheel {

Backoff::Backoff(absl::Duration initial, absl::Duration max)
    : initial_(initial), max_(std::max(initial, max)) {}

absl::Duration Backoff::Next(absl::BitGenRef gen, absl::Duration cap) {
  step_ = std::min(failures_ == 0 ? initial_ : std::min(step_ * 2, max_), cap);
  ++failures_;
  return step_ / 2 + absl::Uniform(gen, 0.0, 0.5) * step_;
}

void Backoff::Reset() {
  failures_ = 0;
  step_ = absl::ZeroDuration();
}

}  // namespace jobwheel
