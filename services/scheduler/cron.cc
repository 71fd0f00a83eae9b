#include "services/scheduler/cron.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace jobwheel::scheduler {
namespace cron_internal {

constexpr int kMinYear = 1970;
constexpr int kMaxYear = 2099;

// How the day is chosen. Exactly one of day-of-month and day-of-week is `?`
// (kNone); the other one decides.
enum class DayOfMonthKind {
  kNone,            // `?`
  kSet,             // values in `dom_bits`
  kLast,            // `L` / `L-n`: last day minus `dom_value`
  kNearestWeekday,  // `nW`: weekday nearest to day `dom_value`
  kLastWeekday,     // `LW` / `L-nW`: weekday nearest to last day - `dom_value`
};
enum class DayOfWeekKind {
  kNone,  // `?`
  kSet,   // values in `dow_bits` (1=SUN ... 7=SAT)
  kNth,   // `d#n`: the `dow_nth`-th weekday `dow_value` of the month
  kLast,  // `dL`: the last weekday `dow_value` of the month
};

// A spring-forward gap: the civil times in [begin, end) do not exist.
struct Gap {
  absl::CivilSecond begin;
  absl::CivilSecond end;
};

struct CronRep {
  std::string expression;
  absl::TimeZone time_zone;
  // The gaps of time_zone from 1970 to kMaxYear, in order; shared by all
  // expressions in the zone.
  std::shared_ptr<const std::vector<Gap>> gaps;
  uint64_t seconds = 0;  // bit i: second i
  uint64_t minutes = 0;  // bit i: minute i
  uint64_t hours = 0;    // bit i: hour i
  uint64_t months = 0;   // bit i: month i (1-12)
  DayOfMonthKind dom_kind = DayOfMonthKind::kNone;
  uint64_t dom_bits = 0;  // bit i: day i (1-31)
  int dom_value = 0;
  DayOfWeekKind dow_kind = DayOfWeekKind::kNone;
  uint64_t dow_bits = 0;  // bit i: day-of-week i (1-7)
  int dow_value = 0;
  int dow_nth = 0;
  std::bitset<kMaxYear - kMinYear + 1> years;  // bit i: year kMinYear + i
};

}  // namespace cron_internal

namespace {

using cron_internal::CronRep;
using cron_internal::DayOfMonthKind;
using cron_internal::DayOfWeekKind;
using cron_internal::Gap;
using cron_internal::kMaxYear;
using cron_internal::kMinYear;

enum FieldIndex {
  kSecond = 0,
  kMinute,
  kHour,
  kDayOfMonth,
  kMonth,
  kDayOfWeek,
  kYear,
};

constexpr std::array<absl::string_view, 12> kMonthNames = {
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
    "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<absl::string_view, 7> kDayNames = {
    "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

struct FieldSpec {
  absl::string_view name;
  int min;
  int max;
  int max_step;  // Quartz's limit on `/n` ("Increment > 60" etc.).
  const absl::string_view* names;  // Value min + i is names[i]; may be null.
  int name_count;
};

constexpr FieldSpec kFieldSpecs[7] = {
    {"second", 0, 59, 59, nullptr, 0},
    {"minute", 0, 59, 59, nullptr, 0},
    {"hour", 0, 23, 23, nullptr, 0},
    {"day-of-month", 1, 31, 31, nullptr, 0},
    {"month", 1, 12, 12, kMonthNames.data(), 12},
    {"day-of-week", 1, 7, 7, kDayNames.data(), 7},
    {"year", kMinYear, kMaxYear, kMaxYear - kMinYear, nullptr, 0},
};

// Field parsing errors are plain reasons; Parse() prefixes the expression and
// the field name.
absl::Status FieldError(absl::string_view reason) {
  return absl::InvalidArgumentError(reason);
}

// `text` quoted and escaped for an error message.
std::string Quoted(absl::string_view text) {
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

struct Number {
  int value;  // Clamped to 999999: far out of every field's range.
  absl::string_view text;
};

// Consumes the leading decimal digits of `*s`, if any.
std::optional<Number> ConsumeNumber(absl::string_view* s) {
  size_t n = 0;
  int value = 0;
  while (n < s->size() && absl::ascii_isdigit((*s)[n])) {
    value = std::min(value * 10 + ((*s)[n] - '0'), 999999);
    ++n;
  }
  if (n == 0) return std::nullopt;
  Number number{value, s->substr(0, n)};
  s->remove_prefix(n);
  return number;
}

// Consumes a value of the field (a number or, in month and day-of-week, a
// name) from the start of `*s`.
absl::StatusOr<int> ConsumeValue(const FieldSpec& spec, absl::string_view* s,
                                 bool* is_name = nullptr) {
  if (is_name != nullptr) *is_name = false;
  if (s->empty()) return FieldError("missing value");
  if (std::optional<Number> number = ConsumeNumber(s)) {
    if (number->value < spec.min || number->value > spec.max) {
      return FieldError(absl::StrCat("value ", number->text, " out of range ",
                                     spec.min, "-", spec.max));
    }
    return number->value;
  }
  size_t n = 0;
  while (n < s->size() && absl::ascii_isalpha((*s)[n])) ++n;
  if (n == 0) {
    return FieldError(
        absl::StrCat("unexpected character ", Quoted(s->substr(0, 1))));
  }
  const absl::string_view word = s->substr(0, n);
  for (int i = 0; i < spec.name_count; ++i) {
    if (word == spec.names[i]) {
      s->remove_prefix(n);
      if (is_name != nullptr) *is_name = true;
      return spec.min + i;
    }
  }
  return FieldError(
      absl::StrCat(spec.names == nullptr ? "unexpected name " : "unknown name ",
                   Quoted(word)));
}

// Parses the increment after '/', which must end the item.
absl::StatusOr<int> ParseStep(const FieldSpec& spec, absl::string_view s) {
  std::optional<Number> step = ConsumeNumber(&s);
  if (!step.has_value() || !s.empty()) {
    return FieldError("'/' must be followed by an increment (a number)");
  }
  if (step->value < 1 || step->value > spec.max_step) {
    return FieldError(absl::StrCat("increment ", step->text, " out of range 1-",
                                   spec.max_step));
  }
  return step->value;
}

// Parses one list item (`*`, `*/n`, `/n`, `v`, `v/n`, `v-w`, `v-w/n`) and
// sets bit `value - bit_offset` of `bits` for each value it selects.
template <typename Bits>
absl::Status ParseItem(const FieldSpec& spec, absl::string_view item,
                       Bits& bits, int bit_offset) {
  int start = spec.min;
  int end = spec.max;
  int step = 1;
  absl::string_view rest = item;
  if (rest.front() == '*' || rest.front() == '/') {
    // `*`, `*/n` and Quartz's shorthand `/n`.
    if (rest.front() == '*') rest.remove_prefix(1);
    if (!rest.empty()) {
      if (rest.front() != '/') {
        return FieldError(absl::StrCat(
            "unexpected character ", Quoted(rest.substr(0, 1)), " after '*'"));
      }
      absl::StatusOr<int> s = ParseStep(spec, rest.substr(1));
      if (!s.ok()) return s.status();
      step = *s;
    }
  } else {
    bool start_is_name = false;
    bool end_is_name = false;
    absl::StatusOr<int> v = ConsumeValue(spec, &rest, &start_is_name);
    if (!v.ok()) return v.status();
    start = end = *v;
    if (!rest.empty() && rest.front() == '-') {
      rest.remove_prefix(1);
      absl::StatusOr<int> w = ConsumeValue(spec, &rest, &end_is_name);
      if (!w.ok()) return w.status();
      end = *w;
    } else if (!rest.empty() && rest.front() == '/') {
      end = spec.max;  // `v/n`: v, v+n, ... up to the field's maximum.
    }
    if (!rest.empty() && rest.front() == '/') {
      if (start_is_name || end_is_name) {
        // Quartz reads `MON-FRI/2` as `MON-FRI` and `JAN/3` as `JAN`.
        return FieldError(
            "an increment after a name is not supported (Quartz ignores it); "
            "use numbers, e.g. 2-6/2");
      }
      absl::StatusOr<int> s = ParseStep(spec, rest.substr(1));
      if (!s.ok()) return s.status();
      step = *s;
      rest = absl::string_view();
    }
    if (!rest.empty()) {
      return FieldError(absl::StrCat("unexpected character ",
                                     Quoted(rest.substr(0, 1)), " in ",
                                     Quoted(item)));
    }
  }
  const int span = spec.max - spec.min + 1;
  int stop = end;
  if (end < start) {
    if (spec.min == kMinYear) {
      return FieldError(absl::StrCat("range ", start, "-", end,
                                     " is reversed (years do not wrap)"));
    }
    stop = end + span;  // Wrap-around range such as 22-2 or FRI-MON.
  }
  for (int i = start; i <= stop; i += step) {
    const int value = (i - spec.min) % span + spec.min;
    bits.set(static_cast<size_t>(value - bit_offset));
  }
  return absl::OkStatus();
}

// Parses a comma-separated list of items.
template <typename Bits>
absl::Status ParseList(const FieldSpec& spec, absl::string_view text,
                       Bits& bits, int bit_offset) {
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    if (item.empty()) return FieldError("empty list item");
    absl::Status status = ParseItem(spec, item, bits, bit_offset);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// A std::bitset-like view of a uint64_t.
struct Bits64 {
  uint64_t* word;
  void set(size_t i) { *word |= uint64_t{1} << i; }
};

absl::Status ParseDayOfMonth(absl::string_view text, CronRep& rep) {
  const FieldSpec& spec = kFieldSpecs[kDayOfMonth];
  if (text.find_first_of("LW") == absl::string_view::npos) {
    rep.dom_kind = DayOfMonthKind::kSet;
    Bits64 bits{&rep.dom_bits};
    return ParseList(spec, text, bits, 0);
  }
  if (absl::StrContains(text, ',')) {
    return FieldError(
        "'L' and 'W' must be the only item in the field (Quartz does not "
        "support them in lists)");
  }
  absl::string_view rest = text;
  if (rest.front() == 'L') {  // `L`, `L-n`, `LW`, `L-nW`.
    rest.remove_prefix(1);
    int offset = 0;
    if (!rest.empty() && rest.front() == '-') {
      rest.remove_prefix(1);
      std::optional<Number> n = ConsumeNumber(&rest);
      if (!n.has_value()) {
        return FieldError("'L-' must be followed by a number of days");
      }
      if (n->value > 30) {
        return FieldError(absl::StrCat("offset from last day ", n->text,
                                       " out of range 0-30"));
      }
      offset = n->value;
    }
    const bool weekday = absl::ConsumePrefix(&rest, "W");
    if (!rest.empty()) {
      return FieldError(
          absl::StrCat(Quoted(text), ": expected L, LW, L-n or L-nW"));
    }
    rep.dom_kind =
        weekday ? DayOfMonthKind::kLastWeekday : DayOfMonthKind::kLast;
    rep.dom_value = offset;
    return absl::OkStatus();
  }
  // `nW`.
  if (!absl::ascii_isdigit(rest.front())) {
    return FieldError(absl::StrCat(
        Quoted(text), ": 'W' must follow a day of the month (e.g. 15W)"));
  }
  absl::StatusOr<int> day = ConsumeValue(spec, &rest);
  if (!day.ok()) return day.status();
  if (rest != "W") {
    return FieldError(absl::StrCat(
        Quoted(text),
        ": 'W' must follow a single day (e.g. 15W), and 'L' must begin the "
        "field (L, LW, L-n, L-nW)"));
  }
  rep.dom_kind = DayOfMonthKind::kNearestWeekday;
  rep.dom_value = *day;
  return absl::OkStatus();
}

absl::Status ParseDayOfWeek(absl::string_view text, CronRep& rep) {
  const FieldSpec& spec = kFieldSpecs[kDayOfWeek];
  if (text.find_first_of("L#") == absl::string_view::npos) {
    rep.dow_kind = DayOfWeekKind::kSet;
    Bits64 bits{&rep.dow_bits};
    return ParseList(spec, text, bits, 0);
  }
  if (absl::StrContains(text, ',')) {
    return FieldError(
        "'L' and '#' must be the only item in the field (Quartz does not "
        "support them in lists)");
  }
  if (text == "L") {  // `L` alone is Saturday.
    rep.dow_kind = DayOfWeekKind::kSet;
    rep.dow_bits = uint64_t{1} << 7;
    return absl::OkStatus();
  }
  absl::string_view rest = text;
  if (absl::ConsumeSuffix(&rest, "L")) {  // `6L`, `FRIL`: the last Friday.
    absl::StatusOr<int> day = ConsumeValue(spec, &rest);
    if (!day.ok()) return day.status();
    if (!rest.empty()) {
      return FieldError(absl::StrCat(
          Quoted(text), ": 'L' needs a single day before it (e.g. 6L)"));
    }
    rep.dow_kind = DayOfWeekKind::kLast;
    rep.dow_value = *day;
    return absl::OkStatus();
  }
  // `6#3`, `FRI#3`: the third Friday.
  absl::StatusOr<int> day = ConsumeValue(spec, &rest);
  if (!day.ok()) return day.status();
  if (!absl::ConsumePrefix(&rest, "#")) {
    return FieldError(absl::StrCat(
        Quoted(text), ": '#' needs a single day before it (e.g. 6#3)"));
  }
  std::optional<Number> nth = ConsumeNumber(&rest);
  if (!nth.has_value() || !rest.empty() || nth->value < 1 || nth->value > 5) {
    return FieldError(absl::StrCat(
        Quoted(text), ": '#' must be followed by an occurrence 1-5"));
  }
  rep.dow_kind = DayOfWeekKind::kNth;
  rep.dow_value = *day;
  rep.dow_nth = nth->value;
  return absl::OkStatus();
}

// Rejects names that would make absl/cctz read arbitrary files ("/dev/zero",
// "../x") or depend on the host ("localtime").
bool IsPlausibleZoneName(absl::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '/' ||
      name == "localtime" || absl::StrContains(name, "..")) {
    return false;
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '/' && c != '_' && c != '-' &&
        c != '+') {
      return false;
    }
  }
  return true;
}

int DaysInMonth(int year, int month) {
  static constexpr int kDays[13] = {0,  31, 28, 31, 30, 31, 30,
                                    31, 31, 30, 31, 30, 31};
  if (month == 2 && ((year % 4 == 0 && year % 100 != 0) || year % 400 == 0)) {
    return 29;
  }
  return kDays[month];
}

// Quartz's day-of-week numbering: 1=SUN ... 7=SAT.
int QuartzWeekday(absl::CivilDay day) {
  switch (absl::GetWeekday(day)) {
    case absl::Weekday::sunday:
      return 1;
    case absl::Weekday::monday:
      return 2;
    case absl::Weekday::tuesday:
      return 3;
    case absl::Weekday::wednesday:
      return 4;
    case absl::Weekday::thursday:
      return 5;
    case absl::Weekday::friday:
      return 6;
    case absl::Weekday::saturday:
      return 7;
  }
  return 1;
}

// The weekday nearest to `day` without leaving the month (Quartz's `W`).
int NearestWeekday(int day, int first_weekday, int days_in_month) {
  int weekday = (first_weekday - 1 + day - 1) % 7 + 1;
  if (weekday == 7) return day == 1 ? day + 2 : day - 1;  // Saturday
  if (weekday == 1) return day == days_in_month ? day - 2 : day + 1;  // Sunday
  return day;
}

// Bit d set for each day d of the month that the day fields accept.
uint64_t DayMask(const CronRep& rep, int year, int month) {
  const int dim = DaysInMonth(year, month);
  const uint64_t month_days = ((uint64_t{1} << (dim + 1)) - 1) & ~uint64_t{1};
  const int first_weekday = QuartzWeekday(absl::CivilDay(year, month, 1));
  switch (rep.dom_kind) {
    case DayOfMonthKind::kSet:
      return rep.dom_bits & month_days;
    case DayOfMonthKind::kLast: {
      int day = dim - rep.dom_value;
      return day >= 1 ? uint64_t{1} << day : 0;
    }
    case DayOfMonthKind::kNearestWeekday:
    case DayOfMonthKind::kLastWeekday: {
      int day = rep.dom_kind == DayOfMonthKind::kNearestWeekday
                    ? rep.dom_value
                    : dim - rep.dom_value;
      if (day < 1 || day > dim) return 0;  // e.g. 31W in April: no fire.
      return uint64_t{1} << NearestWeekday(day, first_weekday, dim);
    }
    case DayOfMonthKind::kNone:
      break;
  }
  // Day-of-week decides. first_of[w]: the first day of the month on weekday w.
  auto first_of = [&](int weekday) {
    return 1 + (weekday - first_weekday + 7) % 7;
  };
  switch (rep.dow_kind) {
    case DayOfWeekKind::kSet: {
      uint64_t mask = 0;
      for (int w = 1; w <= 7; ++w) {
        if ((rep.dow_bits >> w & 1) == 0) continue;
        for (int d = first_of(w); d <= dim; d += 7) mask |= uint64_t{1} << d;
      }
      return mask;
    }
    case DayOfWeekKind::kNth: {
      int day = first_of(rep.dow_value) + 7 * (rep.dow_nth - 1);
      return day <= dim ? uint64_t{1} << day : 0;
    }
    case DayOfWeekKind::kLast: {
      int day = first_of(rep.dow_value);
      while (day + 7 <= dim) day += 7;
      return uint64_t{1} << day;
    }
    case DayOfWeekKind::kNone:
      break;
  }
  return 0;
}

// The lowest set bit of `mask` at or above `from`, or -1.
int NextBit(uint64_t mask, int from) {
  if (from < 0) from = 0;
  if (from >= 64) return -1;
  uint64_t m = mask & (~uint64_t{0} << from);
  return m == 0 ? -1 : __builtin_ctzll(m);
}

// The spring-forward gaps of `tz` from 1970 to kMaxYear, in order. Computed
// once per zone (tens of microseconds for a zone with DST) and shared, so that
// NextAfter can step through gaps without asking the zone again.
std::shared_ptr<const std::vector<Gap>> ZoneGaps(const absl::TimeZone& tz) {
  static absl::Mutex* const mu = new absl::Mutex;
  static auto* const cache =
      new std::map<std::string, std::shared_ptr<const std::vector<Gap>>>;
  absl::MutexLock lock(mu);
  std::shared_ptr<const std::vector<Gap>>& gaps = (*cache)[tz.name()];
  if (gaps == nullptr) {
    auto found = std::make_shared<std::vector<Gap>>();
    absl::Time from = absl::FromCivil(absl::CivilSecond(kMinYear - 1, 12, 30),
                                      absl::UTCTimeZone());
    absl::TimeZone::CivilTransition trans;
    while (tz.NextTransition(from, &trans) && trans.from.year() <= kMaxYear) {
      from = tz.At(trans.to).trans;
      if (trans.to > trans.from) found->push_back(Gap{trans.from, trans.to});
    }
    gaps = std::move(found);
  }
  return gaps;
}

// Quartz computes with a lenient java.util.GregorianCalendar, which resolves a
// civil time inside a spring-forward gap with the pre-transition offset: the
// time moves forward by the length of the gap (02:30 becomes 03:30 on
// 2024-03-10 in America/New_York, 02:10 becomes 02:40 on 2024-10-06 in
// Australia/Lord_Howe). A repeated civil time keeps its fields (Java picks its
// second occurrence, see NextAfter). GapResolver applies that shift; the civil
// times it is given must not decrease.
class GapResolver {
 public:
  GapResolver(const std::vector<Gap>& gaps, absl::CivilSecond from)
      : next_(std::upper_bound(
            gaps.begin(), gaps.end(), from,
            [](absl::CivilSecond c, const Gap& gap) { return c < gap.end; })),
        end_(gaps.end()) {}

  // The civil time Java's Calendar shows after its fields are set to `c`.
  absl::CivilSecond Resolve(absl::CivilSecond c) {
    while (next_ != end_ && c >= next_->end) ++next_;
    if (next_ != end_ && c >= next_->begin) c += next_->end - next_->begin;
    return c;
  }

 private:
  std::vector<Gap>::const_iterator next_;  // The first gap ending after c.
  std::vector<Gap>::const_iterator end_;
};

// Quartz's setCalendarHour: sets the hour (the other fields as given); if a
// gap moved the result to another hour, sets hour + 1 on the moved fields.
absl::CivilSecond SetHour(GapResolver& gaps, int64_t year, int month, int day,
                          int hour, int minute, int second) {
  absl::CivilSecond c =
      gaps.Resolve(absl::CivilSecond(year, month, day, hour, minute, second));
  if (c.hour() != hour && hour != 24) {
    c = gaps.Resolve(absl::CivilSecond(c.year(), c.month(), c.day(), hour + 1,
                                       c.minute(), c.second()));
  }
  return c;
}

bool YearMatches(const CronRep& rep, int64_t year) {
  return year >= kMinYear && year <= kMaxYear &&
         rep.years.test(static_cast<size_t>(year - kMinYear));
}

// The first civil time at or after `c` (an existing civil time) that the
// expression accepts, found the way Quartz 2.3.2's getTimeAfter finds it, or
// nullopt if there is none up to the end of kMaxYear. Quartz fixes the second,
// then the minute, hour, day, month and year, and starts over from the second
// whenever the minute or a larger field changes; every change goes through
// `gaps` as through Java's Calendar, and hours are set by SetHour. Without a
// gap this is simply the first matching civil time at or after `c`; the order
// of the steps decides which times around a gap fire (see cron.h). The cost is
// bounded by the number of months scanned.
//
// Two shortcuts Quartz does not take: a year or month that cannot match is
// skipped whole, and a day that does not match moves to the next matching day
// of the month (or the 1st of the next month) where Quartz sometimes stops at
// other days in between. Both only skip civil times that cannot fire, so they
// change nothing unless a gap spanned a day, month or year boundary.
std::optional<absl::CivilSecond> QuartzWalk(const CronRep& rep,
                                            GapResolver& gaps,
                                            absl::CivilSecond c) {
  const int first_second = __builtin_ctzll(rep.seconds);
  const int first_minute = __builtin_ctzll(rep.minutes);
  const int first_hour = __builtin_ctzll(rep.hours);
  while (true) {
    const int64_t year = c.year();
    if (year > kMaxYear) return std::nullopt;
    if (!YearMatches(rep, year)) {
      int64_t next = std::max<int64_t>(year + 1, kMinYear);
      while (next <= kMaxYear && !YearMatches(rep, next)) ++next;
      if (next > kMaxYear) return std::nullopt;
      c = gaps.Resolve(absl::CivilSecond(next, 1, 1, 0, 0, 0));
      continue;
    }
    if ((rep.months >> c.month() & 1) == 0) {
      const int month = NextBit(rep.months, c.month());
      c = gaps.Resolve(month < 0 ? absl::CivilSecond(year + 1, 1, 1, 0, 0, 0)
                                 : absl::CivilSecond(year, month, 1, 0, 0, 0));
      continue;
    }
    // Second (a carry sets the next minute without starting over).
    const int second = NextBit(rep.seconds, c.second());
    if (second < 0) {
      c = gaps.Resolve(absl::CivilSecond(c.year(), c.month(), c.day(), c.hour(),
                                         c.minute() + 1, first_second));
    } else if (second != c.second()) {
      c = gaps.Resolve(absl::CivilSecond(c.year(), c.month(), c.day(), c.hour(),
                                         c.minute(), second));
    }
    // Minute.
    const int minute = NextBit(rep.minutes, c.minute());
    if (minute != c.minute()) {
      c = minute < 0 ? SetHour(gaps, c.year(), c.month(), c.day(), c.hour() + 1,
                               first_minute, 0)
                     : SetHour(gaps, c.year(), c.month(), c.day(), c.hour(),
                               minute, 0);
      continue;
    }
    // Hour.
    const int hour = NextBit(rep.hours, c.hour());
    if (hour != c.hour()) {
      c = hour < 0 ? SetHour(gaps, c.year(), c.month(), c.day() + 1, first_hour,
                             0, 0)
                   : SetHour(gaps, c.year(), c.month(), c.day(), hour, 0, 0);
      continue;
    }
    // Day.
    const int day = NextBit(
        DayMask(rep, static_cast<int>(c.year()), c.month()), c.day());
    if (day != c.day()) {
      c = gaps.Resolve(
          day < 0 ? absl::CivilSecond(c.year(), c.month() + 1, 1, 0, 0, 0)
                  : absl::CivilSecond(c.year(), c.month(), day, 0, 0, 0));
      continue;
    }
    // Month and year: the carries above may have left the checked ones.
    if ((rep.months >> c.month() & 1) == 0 || !YearMatches(rep, c.year())) {
      continue;
    }
    return c;
  }
}

}  // namespace

absl::StatusOr<CronExpression> CronExpression::Parse(
    absl::string_view expression, absl::string_view time_zone) {
  auto rep = std::make_shared<CronRep>();
  rep->expression = std::string(expression);

  if (time_zone.empty()) time_zone = "UTC";
  if (!IsPlausibleZoneName(time_zone) ||
      !absl::LoadTimeZone(std::string(time_zone), &rep->time_zone)) {
    return absl::InvalidArgumentError(
        absl::StrCat("time_zone: unknown time zone ", Quoted(time_zone)));
  }
  rep->gaps = ZoneGaps(rep->time_zone);

  const std::string prefix =
      absl::StrCat("cron expression ", Quoted(expression), ": ");
  const std::string upper = absl::AsciiStrToUpper(expression);
  std::vector<absl::string_view> fields =
      absl::StrSplit(upper, absl::ByAnyChar(" \t\n\r\f\v"), absl::SkipEmpty());
  if (fields.size() != 6 && fields.size() != 7) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix,
        "expected 6 or 7 fields (second minute hour day-of-month month "
        "day-of-week [year]), got ",
        fields.size()));
  }
  if (fields.size() == 6) fields.push_back("*");

  for (int f = 0; f < 7; ++f) {
    const FieldSpec& spec = kFieldSpecs[f];
    const absl::string_view text = fields[f];
    absl::Status status;
    Bits64 bits{nullptr};
    if (text == "?") {
      if (f != kDayOfMonth && f != kDayOfWeek) {
        status =
            FieldError("'?' is only allowed in day-of-month and day-of-week");
      } else if (f == kDayOfWeek && rep->dom_kind == DayOfMonthKind::kNone) {
        status = FieldError(
            "'?' cannot be used in both day-of-month and "
            "day-of-week");
      }
    } else if (absl::StrContains(text, '?')) {
      status = FieldError("'?' must be the whole field");
    } else {
      switch (f) {
        case kSecond:
          bits.word = &rep->seconds;
          status = ParseList(spec, text, bits, 0);
          break;
        case kMinute:
          bits.word = &rep->minutes;
          status = ParseList(spec, text, bits, 0);
          break;
        case kHour:
          bits.word = &rep->hours;
          status = ParseList(spec, text, bits, 0);
          break;
        case kDayOfMonth:
          status = ParseDayOfMonth(text, *rep);
          break;
        case kMonth:
          bits.word = &rep->months;
          status = ParseList(spec, text, bits, 0);
          break;
        case kDayOfWeek:
          status = ParseDayOfWeek(text, *rep);
          if (status.ok() && rep->dom_kind != DayOfMonthKind::kNone) {
            status = FieldError(
                "one of day-of-month and day-of-week must be '?' (Quartz does "
                "not support specifying both)");
          }
          break;
        case kYear:
          status = ParseList(spec, text, rep->years, kMinYear);
          break;
      }
    }
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, "field ", spec.name, ": ", status.message()));
    }
  }
  return CronExpression(std::move(rep));
}

std::optional<absl::Time> CronExpression::NextAfter(absl::Time after) const {
  const CronRep& rep = *rep_;
  const absl::TimeZone& tz = rep.time_zone;
  // Nothing fires before 1970 local time, which is after this instant in
  // every zone; clamping keeps civil arithmetic away from infinities.
  const absl::Time kEarliest = absl::FromUnixSeconds(-3 * 86400);
  if (after == absl::InfiniteFuture()) return std::nullopt;
  if (after < kEarliest) after = kEarliest;

  // Like Quartz: the search starts one second later, truncated to the second,
  // as civil time (its occurrence does not matter, see below).
  const absl::Time start = after + absl::Seconds(1);
  absl::CivilSecond c = absl::ToCivilSecond(start, tz);
  if (c.year() > kMaxYear) return std::nullopt;
  if (c.year() < kMinYear) c = absl::CivilSecond(kMinYear, 1, 1, 0, 0, 0);
  GapResolver gaps(*rep.gaps, c);
  while (true) {
    std::optional<absl::CivilSecond> match =
        QuartzWalk(rep, gaps, gaps.Resolve(c));
    if (!match.has_value()) return std::nullopt;
    // Java's Calendar gives a repeated civil time (fall-back) the
    // post-transition offset, so it fires at its second occurrence only; the
    // walk never yields a skipped one.
    const absl::TimeZone::TimeInfo info = tz.At(*match);
    const absl::Time t =
        info.kind == absl::TimeZone::TimeInfo::REPEATED ? info.post : info.pre;
    // Always true as civil time only moves forward from `start`; kept so a
    // zone with odd data cannot make a chain of fire times stall.
    if (t > after) return t;
    c = *match + 1;
  }
}

const std::string& CronExpression::expression() const {
  return rep_->expression;
}

const absl::TimeZone& CronExpression::time_zone() const {
  return rep_->time_zone;
}

}  // namespace jobwheel::scheduler
