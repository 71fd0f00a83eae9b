#include "services/scheduler/cron.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
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

struct CronRep {
  std::string expression;
  absl::TimeZone time_zone;
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

// Parses one field. Errors are plain reasons; Parse() adds the expression and
// the field name.
class FieldParser {
 public:
  FieldParser(const FieldSpec& spec, absl::string_view text)
      : spec_(spec), text_(text) {}

  // Parses `text` as a comma-separated list of `*`, `*/n`, `/n`, `v`, `v/n`,
  // `v-w`, `v-w/n` and sets bit `value - bit_offset` of `bits` for each value.
  template <typename Bits>
  absl::Status ParseList(Bits& bits, int bit_offset) {
    for (absl::string_view item : absl::StrSplit(text_, ',')) {
      if (item.empty()) return Error("empty list item");
      absl::Status status = ParseItem(item, bits, bit_offset);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  // Parses a value (number or, where the field has them, a name) at the start
  // of `*s`, consuming it.
  absl::StatusOr<int> ParseValue(absl::string_view* s, bool* is_name) const {
    *is_name = false;
    if (s->empty()) return Error("missing value");
    if (absl::ascii_isdigit(s->front())) {
      int64_t v = 0;
      size_t i = 0;
      for (; i < s->size() && absl::ascii_isdigit((*s)[i]); ++i) {
        v = std::min<int64_t>(v * 10 + ((*s)[i] - '0'), 1000000);
      }
      s->remove_prefix(i);
      if (v < spec_.min || v > spec_.max) {
        return Error(absl::StrCat("value ", v, " out of range ", spec_.min, "-",
                                  spec_.max));
      }
      return static_cast<int>(v);
    }
    if (absl::ascii_isalpha(s->front())) {
      size_t i = 0;
      while (i < s->size() && absl::ascii_isalpha((*s)[i])) ++i;
      absl::string_view word = s->substr(0, i);
      if (spec_.names == nullptr) {
        return Error(absl::StrCat("unexpected name \"", word, "\""));
      }
      for (int n = 0; n < spec_.name_count; ++n) {
        if (word == spec_.names[n]) {
          s->remove_prefix(i);
          *is_name = true;
          return spec_.min + n;
        }
      }
      return Error(absl::StrCat("unknown name \"", word, "\""));
    }
    return Error(absl::StrCat("unexpected character '", s->substr(0, 1), "'"));
  }

  absl::Status Error(absl::string_view reason) const {
    return absl::InvalidArgumentError(reason);
  }

 private:
  // Parses the step after '/', which must end the item.
  absl::StatusOr<int> ParseStep(absl::string_view s) const {
    if (s.empty()) return Error("'/' must be followed by an increment");
    int64_t v = 0;
    for (char c : s) {
      if (!absl::ascii_isdigit(c)) {
        return Error(absl::StrCat("unexpected character '", std::string(1, c),
                                  "' in increment"));
      }
      v = std::min<int64_t>(v * 10 + (c - '0'), 1000000);
    }
    if (v < 1 || v > spec_.max_step) {
      return Error(
          absl::StrCat("increment ", v, " out of range 1-", spec_.max_step));
    }
    return static_cast<int>(v);
  }

  template <typename Bits>
  absl::Status ParseItem(absl::string_view item, Bits& bits, int bit_offset) {
    int start = spec_.min;
    int end = spec_.max;
    int step = 1;
    if (item.front() == '*' || item.front() == '/') {
      // `*`, `*/n` and Quartz's shorthand `/n`.
      absl::string_view rest = item.substr(item.front() == '*' ? 1 : 0);
      if (!rest.empty()) {
        if (rest.front() != '/') {
          return Error(absl::StrCat("unexpected character '", rest.substr(0, 1),
                                    "' after '*'"));
        }
        absl::StatusOr<int> s = ParseStep(rest.substr(1));
        if (!s.ok()) return s.status();
        step = *s;
      }
    } else {
      absl::string_view rest = item;
      bool start_is_name = false;
      absl::StatusOr<int> v = ParseValue(&rest, &start_is_name);
      if (!v.ok()) return v.status();
      start = *v;
      bool has_range = false;
      bool end_is_name = false;
      if (!rest.empty() && rest.front() == '-') {
        rest.remove_prefix(1);
        absl::StatusOr<int> w = ParseValue(&rest, &end_is_name);
        if (!w.ok()) return w.status();
        end = *w;
        has_range = true;
      }
      if (!rest.empty() && rest.front() == '/') {
        if (start_is_name || end_is_name) {
          // Quartz parses `MON-FRI/2` as `MON-FRI`, silently.
          return Error(
              "an increment after a name is not supported (Quartz ignores "
              "it); use numbers, e.g. 2-6/2");
        }
        absl::StatusOr<int> s = ParseStep(rest.substr(1));
        if (!s.ok()) return s.status();
        step = *s;
        rest = absl::string_view();
      } else if (!has_range) {
        end = start;
      }
      if (!rest.empty()) {
        return Error(absl::StrCat("unexpected character '", rest.substr(0, 1),
                                  "' in \"", item, "\""));
      }
    }
    int span = spec_.max - spec_.min + 1;
    int stop = end;
    if (end < start) {
      if (spec_.min == kMinYear) {
        return Error(absl::StrCat("range ", start, "-", end,
                                  " is reversed (years do not wrap around)"));
      }
      stop = end + span;  // Wrap-around range such as 22-2 or FRI-MON.
    }
    for (int i = start; i <= stop; i += step) {
      int value = (i - spec_.min) % span + spec_.min;
      bits.set(static_cast<size_t>(value - bit_offset));
    }
    return absl::OkStatus();
  }

  const FieldSpec& spec_;
  absl::string_view text_;
};

// A std::bitset-like view over a uint64_t.
struct Bits64 {
  uint64_t* word;
  void set(size_t i) { *word |= uint64_t{1} << i; }
};

absl::Status ParseDayOfMonth(FieldParser& parser, absl::string_view text,
                             CronRep& rep) {
  bool special = text.find_first_of("LW") != absl::string_view::npos;
  if (!special) {
    rep.dom_kind = DayOfMonthKind::kSet;
    Bits64 bits{&rep.dom_bits};
    return parser.ParseList(bits, 0);
  }
  if (text.find(',') != absl::string_view::npos) {
    return parser.Error(
        "'L' and 'W' must be the only item in the field (Quartz does not "
        "support them in lists)");
  }
  if (text.front() == 'L') {
    absl::string_view rest = text.substr(1);
    int offset = 0;
    if (!rest.empty() && rest.front() == '-') {
      rest.remove_prefix(1);
      if (rest.empty() || !absl::ascii_isdigit(rest.front())) {
        return parser.Error("'L-' must be followed by a number of days");
      }
      int64_t v = 0;
      while (!rest.empty() && absl::ascii_isdigit(rest.front())) {
        v = std::min<int64_t>(v * 10 + (rest.front() - '0'), 1000000);
        rest.remove_prefix(1);
      }
      if (v > 30) {
        return parser.Error(
            absl::StrCat("offset from last day ", v, " out of range 0-30"));
      }
      offset = static_cast<int>(v);
    }
    bool weekday = false;
    if (!rest.empty() && rest.front() == 'W') {
      weekday = true;
      rest.remove_prefix(1);
    }
    if (!rest.empty()) {
      return parser.Error(absl::StrCat("unexpected character '",
                                       rest.substr(0, 1), "' in \"", text,
                                       "\" (expected L, LW, L-n or L-nW)"));
    }
    rep.dom_kind =
        weekday ? DayOfMonthKind::kLastWeekday : DayOfMonthKind::kLast;
    rep.dom_value = offset;
    return absl::OkStatus();
  }
  // `nW`.
  if (!absl::ascii_isdigit(text.front())) {
    return parser.Error(absl::StrCat(
        "\"", text, "\": 'W' must follow a day of the month (e.g. 15W)"));
  }
  absl::string_view rest = text;
  bool is_name = false;
  absl::StatusOr<int> day = parser.ParseValue(&rest, &is_name);
  if (!day.ok()) return day.status();
  if (rest != "W") {
    return parser.Error(absl::StrCat(
        "\"", text,
        "\": 'W' must follow a single day (e.g. 15W) and 'L' must start the "
        "field (L, LW, L-n, L-nW)"));
  }
  rep.dom_kind = DayOfMonthKind::kNearestWeekday;
  rep.dom_value = *day;
  return absl::OkStatus();
}

absl::Status ParseDayOfWeek(FieldParser& parser, absl::string_view text,
                            CronRep& rep) {
  bool special = text.find_first_of("L#") != absl::string_view::npos;
  if (!special) {
    rep.dow_kind = DayOfWeekKind::kSet;
    Bits64 bits{&rep.dow_bits};
    return parser.ParseList(bits, 0);
  }
  if (text.find(',') != absl::string_view::npos) {
    return parser.Error(
        "'L' and '#' must be the only item in the field (Quartz does not "
        "support them in lists)");
  }
  if (text == "L") {  // `L` alone is Saturday.
    rep.dow_kind = DayOfWeekKind::kSet;
    rep.dow_bits = uint64_t{1} << 7;
    return absl::OkStatus();
  }
  if (text.back() == 'L') {  // `6L`, `FRIL`: the last such day of the month.
    absl::string_view rest = text.substr(0, text.size() - 1);
    bool is_name = false;
    absl::StatusOr<int> day = parser.ParseValue(&rest, &is_name);
    if (!day.ok()) return day.status();
    if (!rest.empty()) {
      return parser.Error(absl::StrCat(
          "\"", text, "\": 'L' needs a single day before it (e.g. 6L)"));
    }
    rep.dow_kind = DayOfWeekKind::kLast;
    rep.dow_value = *day;
    return absl::OkStatus();
  }
  absl::string_view rest = text;
  bool is_name = false;
  absl::StatusOr<int> day = parser.ParseValue(&rest, &is_name);
  if (!day.ok()) return day.status();
  if (!rest.empty() && rest.front() == '#') {
    rest.remove_prefix(1);
    int64_t n = 0;
    bool digits = !rest.empty();
    for (char c : rest) {
      if (!absl::ascii_isdigit(c)) digits = false;
      n = std::min<int64_t>(n * 10 + (c - '0'), 1000000);
    }
    if (!digits || n < 1 || n > 5) {
      return parser.Error(absl::StrCat("\"", text,
                                       "\": '#' must be followed by an "
                                       "occurrence 1-5"));
    }
    rep.dow_kind = DayOfWeekKind::kNth;
    rep.dow_value = *day;
    rep.dow_nth = static_cast<int>(n);
    return absl::OkStatus();
  }
  return parser.Error(absl::StrCat(
      "\"", text, "\": '#' needs a single day before it (e.g. 6#3, FRI#3)"));
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

// The first civil time strictly after `after` that all fields accept, or
// nullopt if there is none up to the end of kMaxYear. Advances field by field
// (year, month, day, hour, minute, second) like Quartz's getTimeAfter, so the
// cost is bounded by the number of months scanned, not seconds.
std::optional<absl::CivilSecond> NextMatch(const CronRep& rep,
                                           absl::CivilSecond after) {
  if (after.year() > kMaxYear) return std::nullopt;
  if (after.year() < kMinYear)
    after = absl::CivilSecond(kMinYear - 1, 12, 31, 23, 59, 59);
  const absl::CivilSecond t = after + 1;
  int64_t year = t.year();
  int month = t.month(), day = t.day(), hour = t.hour(), minute = t.minute(),
      second = t.second();
  // Each pass either returns or moves (year, month, day, hour, minute) forward;
  // values past their field's end (hour 24, month 13, ...) carry on the next
  // pass. The pass count is bounded by roughly (months scanned) * 5.
  while (true) {
    if (year > kMaxYear) return std::nullopt;
    if (!rep.years.test(static_cast<size_t>(year - kMinYear))) {
      do {
        ++year;
      } while (year <= kMaxYear &&
               !rep.years.test(static_cast<size_t>(year - kMinYear)));
      month = 1, day = 1, hour = 0, minute = 0, second = 0;
      continue;
    }
    int next_month = NextBit(rep.months, month);
    if (next_month < 0) {
      ++year, month = 1, day = 1, hour = 0, minute = 0, second = 0;
      continue;
    }
    if (next_month != month) {
      month = next_month, day = 1, hour = 0, minute = 0, second = 0;
    }
    int next_day = NextBit(DayMask(rep, static_cast<int>(year), month), day);
    if (next_day < 0) {
      ++month, day = 1, hour = 0, minute = 0, second = 0;
      continue;
    }
    if (next_day != day) {
      day = next_day, hour = 0, minute = 0, second = 0;
    }
    int next_hour = NextBit(rep.hours, hour);
    if (next_hour < 0 || next_hour > 23) {
      ++day, hour = 0, minute = 0, second = 0;
      continue;
    }
    if (next_hour != hour) {
      hour = next_hour, minute = 0, second = 0;
    }
    int next_minute = NextBit(rep.minutes, minute);
    if (next_minute < 0 || next_minute > 59) {
      ++hour, minute = 0, second = 0;
      continue;
    }
    if (next_minute != minute) {
      minute = next_minute, second = 0;
    }
    int next_second = NextBit(rep.seconds, second);
    if (next_second < 0 || next_second > 59) {
      ++minute, second = 0;
      continue;
    }
    return absl::CivilSecond(year, month, day, hour, minute, next_second);
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
        absl::StrCat("time_zone: unknown time zone \"", time_zone, "\""));
  }

  const std::string prefix =
      absl::StrCat("cron expression \"", expression, "\": ");
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
    FieldParser parser(spec, text);
    absl::Status status;
    if (text == "?") {
      if (f != kDayOfMonth && f != kDayOfWeek) {
        status =
            parser.Error("'?' is only allowed in day-of-month and day-of-week");
      } else if (f == kDayOfWeek && rep->dom_kind == DayOfMonthKind::kNone) {
        status = parser.Error(
            "'?' cannot be used in both day-of-month and day-of-week");
      }
    } else if (text.find('?') != absl::string_view::npos) {
      status = parser.Error("'?' must be the whole field");
    } else {
      switch (f) {
        case kSecond: {
          Bits64 bits{&rep->seconds};
          status = parser.ParseList(bits, 0);
          break;
        }
        case kMinute: {
          Bits64 bits{&rep->minutes};
          status = parser.ParseList(bits, 0);
          break;
        }
        case kHour: {
          Bits64 bits{&rep->hours};
          status = parser.ParseList(bits, 0);
          break;
        }
        case kDayOfMonth:
          status = ParseDayOfMonth(parser, text, *rep);
          break;
        case kMonth: {
          Bits64 bits{&rep->months};
          status = parser.ParseList(bits, 0);
          break;
        }
        case kDayOfWeek:
          status = ParseDayOfWeek(parser, text, *rep);
          if (status.ok() && rep->dom_kind != DayOfMonthKind::kNone) {
            status = parser.Error(
                "one of day-of-month and day-of-week must be '?' (Quartz "
                "does not support specifying both)");
          }
          break;
        case kYear:
          status = parser.ParseList(rep->years, kMinYear);
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

  // The fire time of civil time c is tz.At(c).pre: for a unique civil time its
  // instant; for a skipped one (spring-forward gap) the instant under the
  // pre-transition offset, i.e. shifted forward by the gap, like lenient
  // java.util.Calendar; for a repeated one (fall-back) the first occurrence.
  // That map is increasing except inside gaps, whose shifted fire times
  // interleave with the civil times right after the gap.
  const absl::CivilSecond now = absl::ToCivilSecond(after, tz);
  if (now.year() > kMaxYear) return std::nullopt;

  // If `after` lies within one gap length after a spring-forward transition,
  // civil times inside the gap may still fire after it.
  absl::CivilSecond lo = now;
  absl::TimeZone::CivilTransition trans;
  if (tz.PrevTransition(after + absl::Seconds(1), &trans) &&
      trans.to > trans.from) {
    const absl::Time trans_time = tz.At(trans.to).trans;
    const int64_t gap = trans.to - trans.from;
    if (trans_time <= after && after < trans_time + absl::Seconds(gap)) {
      lo = now - gap;
    }
  }

  std::optional<absl::CivilSecond> c = NextMatch(rep, lo);
  absl::TimeZone::TimeInfo info;
  while (true) {
    if (!c.has_value()) return std::nullopt;
    info = tz.At(*c);
    if (info.pre > after) break;
    if (info.kind == absl::TimeZone::TimeInfo::REPEATED) {
      // `after` is in the second occurrence of a repeated interval; its civil
      // times fired at their first occurrence. Skip to the interval's end.
      const absl::CivilSecond repeat_end =
          absl::ToCivilSecond(info.trans, tz) +
          absl::ToInt64Seconds(info.post - info.pre);
      c = NextMatch(rep, std::max(*c, repeat_end - 1));
    } else {
      // A civil time between the gap and `after` (fired already).
      c = NextMatch(rep, std::max(*c, now));
    }
  }
  absl::Time best = info.pre;
  if (info.kind == absl::TimeZone::TimeInfo::SKIPPED) {
    // The first match at or after the end of the gap may fire earlier than
    // the shifted gap time.
    const absl::CivilSecond gap_end = absl::ToCivilSecond(info.trans, tz);
    std::optional<absl::CivilSecond> c2 =
        NextMatch(rep, std::max(now, gap_end - 1));
    if (c2.has_value()) {
      const absl::Time t2 = tz.At(*c2).pre;
      if (t2 > after && t2 < best) best = t2;
    }
  }
  return best;
}

const std::string& CronExpression::expression() const {
  return rep_->expression;
}

const absl::TimeZone& CronExpression::time_zone() const {
  return rep_->time_zone;
}

}  // namespace jobwheel::scheduler
