// libFuzzer target for CronExpression: parses the input and, if it is valid,
// computes a few successive fire times, checking that each one is a whole
// second strictly after the previous one, not past 2099, and agrees with
// Search().
//
// Input layout: byte 0 picks the time zone, bytes 1-2 the start time, the
// rest is the expression. Shorter inputs are taken as an expression in UTC.
// Built and run by scripts/fuzz-cron.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "services/scheduler/cron.h"

namespace {

constexpr absl::string_view kZones[] = {
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Asia/Shanghai",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "",
    "No/Such_Zone",
};

// 2100-01-02T00:00:00Z: past the last fire time in any zone.
constexpr int64_t kLatestFire = 4102531200;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view zone = "UTC";
  absl::Time start = absl::FromUnixSeconds(1700000000);
  absl::string_view expression(reinterpret_cast<const char*>(data), size);
  if (size >= 3) {
    zone = kZones[data[0] % (sizeof(kZones) / sizeof(kZones[0]))];
    const int v = data[1] << 8 | data[2];
    if (v == 0xffff) {
      start = absl::InfiniteFuture();
    } else if (v == 0xfffe) {
      start = absl::InfinitePast();
    } else {
      // Spread over 1969-2100, with a sub-second part now and then.
      start = absl::FromUnixSeconds(int64_t{v - 16} * 62600) +
              absl::Milliseconds(data[2] % 7 == 0 ? 500 : 0);
    }
    expression.remove_prefix(3);
  }

  absl::StatusOr<jobwheel::scheduler::CronExpression> cron =
      jobwheel::scheduler::CronExpression::Parse(expression, zone);
  if (!cron.ok()) {
    if (cron.status().code() != absl::StatusCode::kInvalidArgument) {
      __builtin_trap();
    }
    return 0;
  }
  const jobwheel::scheduler::CronExpression copy = *cron;
  if (copy.expression() != expression) __builtin_trap();

  absl::Time t = start;
  for (int i = 0; i < 4; ++i) {
    std::optional<absl::Time> next = copy.NextAfter(t);
    // NextAfter is Search's time when it is later than the start.
    const jobwheel::scheduler::CronSearch search = copy.Search(t);
    if (search.time.has_value() != (search.stop == jobwheel::scheduler::CronSearch::kFired) ||
        (next.has_value() && search.time != next)) {
      __builtin_trap();
    }
    if (!next.has_value()) break;
    if (*next <= t || absl::ToUnixNanos(*next) % 1000000000 != 0 ||
        absl::ToUnixSeconds(*next) > kLatestFire) {
      __builtin_trap();
    }
    t = *next;
  }
  return 0;
}
