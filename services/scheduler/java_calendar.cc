#include "services/scheduler/java_calendar.h"

#include <algorithm>
#include <cstdint>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace jobwheel::scheduler::cron_internal {

int DaysInMonth(int64_t year, int month) {
  static constexpr int kDays[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month == 2 && ((year % 4 == 0 && year % 100 != 0) || year % 400 == 0)) {
    return 29;
  }
  return kDays[month];
}

void JavaCalendar::SetCivil(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t s) {
  pending_ = Fields{y, mo, d, h, mi, s};
  dirty_ = true;
}

void JavaCalendar::AddYear() {
  Complete();
  const int64_t y = civil_.year() + 1;
  const int d = std::min<int>(civil_.day(), DaysInMonth(y, civil_.month()));
  SetCivil(y, civil_.month(), d, civil_.hour(), civil_.minute(), civil_.second());
}

int JavaCalendar::DayOfWeek() {
  const absl::Weekday w = absl::GetWeekday(absl::CivilDay(Complete()));
  return w == absl::Weekday::sunday ? 1 : static_cast<int>(w) + 2;
}

const absl::CivilSecond& JavaCalendar::Complete() {
  if (dirty_) {
    const Fields& f = pending_;
    // Month first (it decides the day count), then the rest, like Java.
    const absl::CivilSecond c =
        absl::CivilSecond(f.y, f.mo, 1) + ((((f.d - 1) * 24 + f.h) * 60 + f.mi) * 60 + f.s);
    const absl::TimeZone::TimeInfo info = tz_.At(c);
    time_ = info.kind == absl::TimeZone::TimeInfo::REPEATED ? info.post : info.pre;
    civil_ = absl::ToCivilSecond(time_, tz_);
    dirty_ = false;
  }
  return civil_;
}

}  // namespace jobwheel::scheduler::cron_internal
