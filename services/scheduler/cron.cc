#include "services/scheduler/cron.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

// This file reproduces Quartz 2.3.2's org.quartz.CronExpression: the parser
// accepts exactly what Quartz accepts and reads it the same way (quirks
// included), and the search reproduces getTimeAfter step by step on a model of
// the lenient java.util.GregorianCalendar it runs on. tests/cron compares the
// two on thousands of generated cases. Where Quartz is surprising we follow it
// anyway: XXL-JOB users write expressions against Quartz.

namespace jobwheel::scheduler {
namespace cron_internal {

// Quartz's markers, stored in the value sets like values (and so visible to
// the search, as in Quartz).
constexpr int kAllSpec = 99;  // `*`
constexpr int kNoSpec = 98;   // `?`

// Quartz sorted sets of values, one per field.
using ValueSet = std::vector<int>;  // Sorted, unique.

struct CronRep {
  std::string expression;
  absl::TimeZone time_zone;
  ValueSet fields[7];              // second, minute, hour, day-of-month, month, dow, year
  bool last_day_of_week = false;   // `dL`
  int nth_day_of_week = 0;         // `d#n`
  bool last_day_of_month = false;  // `L...` in day-of-month
  bool nearest_weekday = false;    // `W`
  int last_day_offset = 0;         // `L-n`
};

}  // namespace cron_internal

namespace {

using cron_internal::CronRep;
using cron_internal::kAllSpec;
using cron_internal::kNoSpec;
using cron_internal::ValueSet;

enum Field {
  kSecond = 0,
  kMinute,
  kHour,
  kDayOfMonth,
  kMonth,
  kDayOfWeek,
  kYear,
};

constexpr absl::string_view kFieldNames[7] = {"second", "minute",      "hour", "day-of-month",
                                              "month",  "day-of-week", "year"};

// Values above this year can never fire (the search stops past kCronMaxYear,
// and Quartz's hard stop is 2999), so a year set stores them all as this value:
// keeps `1970-2000000000` from filling memory while behaving identically.
constexpr int kYearCap = 3000;

// `text` quoted and escaped for an error message.
std::string Quoted(absl::string_view text) {
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

// Java's Integer.parseInt: optional sign, at least one decimal digit, no
// overflow of int32.
std::optional<int> JavaParseInt(absl::string_view s) {
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s.front() == '+' || s.front() == '-') {
    negative = s.front() == '-';
    s.remove_prefix(1);
    if (s.empty()) return std::nullopt;
  }
  int64_t value = 0;
  for (char c : s) {
    if (!absl::ascii_isdigit(c)) return std::nullopt;
    value = value * 10 + (c - '0');
    if (value > int64_t{std::numeric_limits<int>::max()} + 1) {
      return std::nullopt;
    }
  }
  if (negative) value = -value;
  if (value > std::numeric_limits<int>::max() || value < std::numeric_limits<int>::min()) {
    return std::nullopt;
  }
  return static_cast<int>(value);
}

// Java int addition (wraps around).
int WrapAdd(int a, int b) {
  return static_cast<int>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

int MonthNumber(absl::string_view name) {  // 1-12, or 0
  static constexpr absl::string_view kNames[12] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                   "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
  for (int i = 0; i < 12; ++i) {
    if (name == kNames[i]) return i + 1;
  }
  return 0;
}

int DayOfWeekNumber(absl::string_view name) {  // 1=SUN ... 7=SAT, or -1
  static constexpr absl::string_view kNames[7] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};
  for (int i = 0; i < 7; ++i) {
    if (name == kNames[i]) return i + 1;
  }
  return -1;
}

// Parses one field the way Quartz's storeExpressionVals/checkNext/addToSet do.
// Errors are plain reasons; Parse() adds the expression and the field.
class FieldParser {
 public:
  FieldParser(CronRep& rep, Field field, std::set<int>* sets)
      : rep_(rep), field_(field), sets_(sets) {}

  // One comma-separated item (never empty).
  absl::Status Item(absl::string_view s);

 private:
  std::set<int>& set() { return sets_[field_]; }
  absl::Status CheckNext(size_t i, absl::string_view s, int val);
  absl::Status CheckIncrement(int incr);
  absl::Status AddToSet(int val, int end, int incr);
  // Quartz's getValue: `v` followed by the digits at s[i...]; sets *pos past
  // them (one further when they end the item, as Quartz does).
  absl::StatusOr<int> Value(int v, absl::string_view s, size_t i, size_t* pos);

  CronRep& rep_;
  Field field_;
  std::set<int>* sets_;
};

absl::StatusOr<int> FieldParser::Value(int v, absl::string_view s, size_t i, size_t* pos) {
  std::string digits = absl::StrCat(v);
  while (i < s.size() && absl::ascii_isdigit(s[i])) digits.push_back(s[i++]);
  *pos = i < s.size() ? i : i + 1;
  std::optional<int> value = JavaParseInt(digits);
  if (!value.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("number ", digits, " is too large"));
  }
  return *value;
}

absl::Status FieldParser::CheckIncrement(int incr) {
  static constexpr int kMaxIncrement[7] = {59, 59, 23, 31, 12, 7, std::numeric_limits<int>::max()};
  if (incr > kMaxIncrement[field_]) {
    return absl::InvalidArgumentError(
        absl::StrCat("increment ", incr, " is larger than ", kMaxIncrement[field_]));
  }
  return absl::OkStatus();
}

absl::Status FieldParser::AddToSet(int val, int end, int incr) {
  static constexpr int kMin[7] = {0, 0, 0, 1, 1, 1, 1970};
  static constexpr int kMax[7] = {59, 59, 23, 31, 12, 7, kCronMaxYear};
  static constexpr int kWrap[7] = {60, 60, 24, 31, 12, 7, 0};
  const bool marker =
      val == kAllSpec || (val == kNoSpec && (field_ == kDayOfMonth || field_ == kDayOfWeek));
  if (field_ != kYear && !marker) {
    const bool low = field_ == kDayOfWeek ? val == 0 : val < kMin[field_];
    if (low || val > kMax[field_] || end > kMax[field_]) {
      return absl::InvalidArgumentError(absl::StrCat("value ", end > kMax[field_] ? end : val,
                                                     " out of range ", kMin[field_], "-",
                                                     kMax[field_]));
    }
  }
  auto add = [&](int v) { set().insert(field_ == kYear ? std::min(v, kYearCap) : v); };
  if ((incr == 0 || incr == -1) && val != kAllSpec) {
    add(val == -1 ? kNoSpec : val);
    return absl::OkStatus();
  }
  int start = val;
  int stop = end;
  if (val == kAllSpec && incr <= 0) {
    incr = 1;
    add(kAllSpec);
  }
  if (stop == -1) stop = kMax[field_];
  if (start == -1 || start == kAllSpec) start = kMin[field_];
  int wrap = -1;
  if (stop < start) {
    if (field_ == kYear) {
      return absl::InvalidArgumentError(absl::StrCat("range ", start, "-", end, " is reversed"));
    }
    wrap = kWrap[field_];
    stop += wrap;
  }
  for (int i = start; i <= stop;) {
    if (wrap == -1) {
      add(i);
      if (field_ == kYear && i >= kYearCap) break;  // The rest cap the same.
    } else {
      int v = i % wrap;
      if (v == 0 && (field_ == kMonth || field_ == kDayOfWeek || field_ == kDayOfMonth)) {
        v = wrap;
      }
      add(v);
    }
    i = WrapAdd(i, incr);  // Java's int overflow, as in Quartz's loop.
  }
  return absl::OkStatus();
}

absl::Status FieldParser::Item(absl::string_view s) {
  const char c = s[0];
  const bool l_form = s == "L" || s == "LW" ||
                      (absl::StartsWith(s, "L-") && [&] {  // Java's matches("^L-[0-9]*[W]?")
                        absl::string_view rest = s.substr(2);
                        while (!rest.empty() && absl::ascii_isdigit(rest.front())) {
                          rest.remove_prefix(1);
                        }
                        return rest.empty() || rest == "W";
                      }());
  if (c >= 'A' && c <= 'Z' && !l_form) {
    // A name: three letters; what follows the name (or the range) is ignored
    // except `-NAME`, `#n` and `L` in day-of-week, as in Quartz.
    if (s.size() < 3) {
      return absl::InvalidArgumentError(absl::StrCat("unknown name ", Quoted(s)));
    }
    int sval = -1;
    int eval = -1;
    size_t i = 0;
    if (field_ == kMonth || field_ == kDayOfWeek) {
      auto number = [&](absl::string_view name) {
        return field_ == kMonth ? (MonthNumber(name) > 0 ? MonthNumber(name) : -1)
                                : DayOfWeekNumber(name);
      };
      sval = number(s.substr(0, 3));
      if (sval < 0) {
        return absl::InvalidArgumentError(absl::StrCat("unknown name ", Quoted(s.substr(0, 3))));
      }
      if (s.size() > 3) {
        const char next = s[3];
        if (next == '-') {
          i = 4;
          if (s.size() < i + 3) {
            return absl::InvalidArgumentError(absl::StrCat("unknown name ", Quoted(s.substr(i))));
          }
          eval = number(s.substr(i, 3));
          if (eval < 0) {
            return absl::InvalidArgumentError(
                absl::StrCat("unknown name ", Quoted(s.substr(i, 3))));
          }
        } else if (field_ == kDayOfWeek && next == '#') {
          std::optional<int> nth = JavaParseInt(s.substr(4));
          if (!nth.has_value() || *nth < 1 || *nth > 5) {
            return absl::InvalidArgumentError("'#' must be followed by a number 1-5");
          }
          rep_.nth_day_of_week = *nth;
        } else if (field_ == kDayOfWeek && next == 'L') {
          rep_.last_day_of_week = true;
        }
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unexpected name ", Quoted(s)));
    }
    return AddToSet(sval, eval, eval != -1 ? 1 : 0);
  }

  if (c == '?') {
    if (s.size() > 2) {  // Quartz lets one character after '?' pass.
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected character ", Quoted(s.substr(1, 1)), " after '?'"));
    }
    if (field_ != kDayOfWeek && field_ != kDayOfMonth) {
      return absl::InvalidArgumentError("'?' is only allowed in day-of-month and day-of-week");
    }
    if (field_ == kDayOfWeek && !rep_.last_day_of_month) {
      const std::set<int>& dom = sets_[kDayOfMonth];
      if (dom.empty()) {
        return absl::InvalidArgumentError("day-of-month has no value");
      }
      if (*dom.rbegin() == kNoSpec) {
        return absl::InvalidArgumentError(
            "'?' cannot be used in both day-of-month and day-of-week");
      }
    }
    return AddToSet(kNoSpec, -1, 0);
  }

  if (c == '*' || c == '/') {
    if (c == '*' && s.size() == 1) return AddToSet(kAllSpec, -1, 0);
    if (c == '/' && s.size() == 1) {
      return absl::InvalidArgumentError("'/' must be followed by a number");
    }
    size_t i = c == '*' ? 1 : 0;
    int incr = 1;  // `*x` is `*` stepping 1 (Quartz ignores the x).
    if (s[i] == '/') {
      ++i;
      if (i >= s.size()) {
        return absl::InvalidArgumentError("'/' must be followed by a number");
      }
      std::optional<int> n = JavaParseInt(s.substr(i));
      if (!n.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'/' must be followed by a number, got ", Quoted(s.substr(i))));
      }
      incr = *n;
      absl::Status status = CheckIncrement(incr);
      if (!status.ok()) return status;
    }
    return AddToSet(kAllSpec, -1, incr);
  }

  if (c == 'L') {
    size_t i = 1;
    if (field_ == kDayOfMonth) rep_.last_day_of_month = true;
    if (field_ == kDayOfWeek) return AddToSet(7, 7, 0);  // `L` is Saturday.
    if (field_ == kDayOfMonth && s.size() > i) {
      if (s[i] == '-') {
        if (i + 1 >= s.size()) {
          return absl::InvalidArgumentError("'L-' must be followed by a number");
        }
        size_t pos = 0;
        absl::StatusOr<int> offset = Value(0, s, i + 1, &pos);
        if (!offset.ok()) return offset.status();
        if (*offset > 30) {
          return absl::InvalidArgumentError(
              absl::StrCat("offset from last day ", *offset, " is over 30"));
        }
        rep_.last_day_offset = *offset;
        i = pos;
      }
      if (i < s.size() && s[i] == 'W') rep_.nearest_weekday = true;
    }
    return absl::OkStatus();  // Other fields: nothing is added (see Search).
  }

  if (absl::ascii_isdigit(c)) {
    int val = c - '0';
    size_t i = 1;
    if (i >= s.size()) return AddToSet(val, -1, -1);
    if (absl::ascii_isdigit(s[i])) {
      absl::StatusOr<int> v = Value(val, s, i, &i);
      if (!v.ok()) return v.status();
      val = *v;
    }
    return CheckNext(i, s, val);
  }
  return absl::InvalidArgumentError(absl::StrCat("unexpected character ", Quoted(s.substr(0, 1))));
}

absl::Status FieldParser::CheckNext(size_t i, absl::string_view s, int val) {
  if (i >= s.size()) return AddToSet(val, -1, -1);
  const char c = s[i];
  if (c == 'L') {
    if (field_ != kDayOfWeek) {
      return absl::InvalidArgumentError(
          "'L' after a number is only allowed in "
          "day-of-week");
    }
    if (val < 1 || val > 7) {
      return absl::InvalidArgumentError(absl::StrCat("values must be between 1 and 7, got ", val));
    }
    rep_.last_day_of_week = true;
    set().insert(val);
    return absl::OkStatus();
  }
  if (c == 'W') {
    if (field_ != kDayOfMonth) {
      return absl::InvalidArgumentError("'W' is only allowed in day-of-month");
    }
    if (val > 31) {
      return absl::InvalidArgumentError(absl::StrCat("'W' needs a day 1-31, got ", val));
    }
    rep_.nearest_weekday = true;
    set().insert(val);
    return absl::OkStatus();
  }
  if (c == '#') {
    if (field_ != kDayOfWeek) {
      return absl::InvalidArgumentError("'#' is only allowed in day-of-week");
    }
    std::optional<int> nth = JavaParseInt(s.substr(i + 1));
    if (!nth.has_value() || *nth < 1 || *nth > 5) {
      return absl::InvalidArgumentError("'#' must be followed by a number 1-5");
    }
    rep_.nth_day_of_week = *nth;
    set().insert(val);
    return absl::OkStatus();
  }
  if (c == '-') {
    ++i;
    if (i >= s.size() || !absl::ascii_isdigit(s[i])) {
      return absl::InvalidArgumentError("'-' must be followed by a number");
    }
    int end = s[i] - '0';
    ++i;
    if (i >= s.size()) return AddToSet(val, end, 1);
    if (absl::ascii_isdigit(s[i])) {
      absl::StatusOr<int> v = Value(end, s, i, &i);
      if (!v.ok()) return v.status();
      end = *v;
    }
    if (i < s.size() && s[i] == '/') {
      ++i;
      if (i >= s.size() || !absl::ascii_isdigit(s[i])) {
        return absl::InvalidArgumentError("'/' must be followed by a number");
      }
      int step = s[i] - '0';
      ++i;
      if (i < s.size() && absl::ascii_isdigit(s[i])) {
        absl::StatusOr<int> v = Value(step, s, i, &i);
        if (!v.ok()) return v.status();
        step = *v;
      }
      // Quartz checks no increment limit here: `0-59/61` is `0`.
      return AddToSet(val, end, step);
    }
    return AddToSet(val, end, 1);  // Anything after the range is ignored.
  }
  if (c == '/') {
    ++i;
    if (i >= s.size() || !absl::ascii_isdigit(s[i])) {
      return absl::InvalidArgumentError("'/' must be followed by a number");
    }
    int step = s[i] - '0';
    ++i;
    if (i < s.size()) {
      if (!absl::ascii_isdigit(s[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("unexpected character ", Quoted(s.substr(i, 1)), " after '/'"));
      }
      absl::StatusOr<int> v = Value(step, s, i, &i);
      if (!v.ok()) return v.status();
      step = *v;
    }
    absl::Status status = CheckIncrement(step);
    if (!status.ok()) return status;
    return AddToSet(val, -1, step);
  }
  return AddToSet(val, -1, 0);  // Quartz ignores anything else after a number.
}

// Rejects names that would make absl/cctz read arbitrary files ("/dev/zero",
// "../x") or depend on the host ("localtime").
bool IsPlausibleZoneName(absl::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '/' || name == "localtime" ||
      absl::StrContains(name, "..")) {
    return false;
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '/' && c != '_' && c != '-' && c != '+') {
      return false;
    }
  }
  return true;
}

int DaysInMonth(int64_t year, int month) {
  static constexpr int kDays[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month == 2 && ((year % 4 == 0 && year % 100 != 0) || year % 400 == 0)) {
    return 29;
  }
  return kDays[month];
}

// A model of the lenient java.util.GregorianCalendar that Quartz searches
// with, to the second. Setting a field is lazy: the next read normalizes all
// fields together (Feb 31 is Mar 2 or 3, hour 24 is the next day) and turns
// the civil time into an instant like Java's ZoneInfo: a civil time in a
// spring-forward gap takes the offset before the gap (so it moves forward by
// the gap), one that occurs twice takes the offset after the change (its
// second occurrence). Reads then show the civil time of that instant.
class JavaCalendar {
 public:
  explicit JavaCalendar(const absl::TimeZone& tz) : tz_(tz) {}

  // Sets the fields to `civil`'s, as a series of set() calls would.
  void SetCivil(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t s) {
    y_ = y, mo_ = mo, d_ = d, h_ = h, mi_ = mi, s_ = s;
    dirty_ = true;
  }
  void SetSecond(int64_t v) {
    Fields();
    s_ = v;
    dirty_ = true;
  }
  void SetMinute(int64_t v) {
    Fields();
    mi_ = v;
    dirty_ = true;
  }
  void SetHour(int64_t v) {
    Fields();
    h_ = v;
    dirty_ = true;
  }
  void SetDay(int64_t v) {
    Fields();
    d_ = v;
    dirty_ = true;
  }
  void SetMonth(int64_t v) {  // 1-based
    Fields();
    mo_ = v;
    dirty_ = true;
  }
  void SetYear(int64_t v) {
    Fields();
    y_ = v;
    dirty_ = true;
  }
  // Calendar.add(YEAR, 1): keeps the day unless the month is shorter.
  void AddYear() {
    Complete();
    const int64_t y = civil_.year() + 1;
    const int d = std::min<int>(civil_.day(), DaysInMonth(y, civil_.month()));
    SetCivil(y, civil_.month(), d, civil_.hour(), civil_.minute(), civil_.second());
  }

  int64_t Year() { return Complete().year(); }
  int Month() { return Complete().month(); }  // 1-based
  int Day() { return Complete().day(); }
  int Hour() { return Complete().hour(); }
  int Minute() { return Complete().minute(); }
  int Second() { return Complete().second(); }
  int DayOfWeek() {  // 1=SUN ... 7=SAT
    const absl::Weekday w = absl::GetWeekday(absl::CivilDay(Complete()));
    return w == absl::Weekday::sunday ? 1 : static_cast<int>(w) + 2;
  }
  absl::Time Time() {
    Complete();
    return time_;
  }

 private:
  // Before a set: the pending fields start from the current ones.
  void Fields() {
    if (dirty_) return;
    y_ = civil_.year(), mo_ = civil_.month(), d_ = civil_.day();
    h_ = civil_.hour(), mi_ = civil_.minute(), s_ = civil_.second();
  }
  const absl::CivilSecond& Complete() {
    if (dirty_) {
      // Month first (it decides the day count), then the rest, like Java.
      const absl::CivilSecond c =
          absl::CivilSecond(y_, mo_, 1) + ((((d_ - 1) * 24 + h_) * 60 + mi_) * 60 + s_);
      const absl::TimeZone::TimeInfo info = tz_.At(c);
      time_ = info.kind == absl::TimeZone::TimeInfo::REPEATED ? info.post : info.pre;
      civil_ = absl::ToCivilSecond(time_, tz_);
      dirty_ = false;
    }
    return civil_;
  }

  const absl::TimeZone& tz_;
  absl::CivilSecond civil_;
  absl::Time time_;
  bool dirty_ = false;
  int64_t y_ = 0, mo_ = 0, d_ = 0, h_ = 0, mi_ = 0, s_ = 0;
};

// The first value >= v, or nullopt (Java's tailSet(v).first()).
std::optional<int> Tail(const ValueSet& set, int64_t v) {
  auto it = std::lower_bound(set.begin(), set.end(), v, [](int a, int64_t b) { return a < b; });
  if (it == set.end()) return std::nullopt;
  return *it;
}

bool Contains(const ValueSet& set, int v) { return std::binary_search(set.begin(), set.end(), v); }

// Java's TreeSet.first(), which throws on an empty set: nullopt then.
std::optional<int> First(const ValueSet& set) {
  if (set.empty()) return std::nullopt;
  return set.front();
}

// Quartz's nearest-weekday rule for `W`: the weekday (per `tcal`) of `day`
// in month `mon`, year `year`, with hour, minute and second of the search;
// sets *day and returns the instant Quartz compares with the start.
absl::Time NearestWeekday(const absl::TimeZone& tz, int64_t year, int mon, int* day, int hr,
                          int min, int sec) {
  // Quartz builds this calendar from "now" and sets every field but the
  // milliseconds, which keep the wall clock's; taking 0 makes the comparison
  // with the start exact whenever the start is a whole second.
  JavaCalendar tcal(tz);
  tcal.SetCivil(year, mon, *day, 0, 0, 0);
  const int ldom = DaysInMonth(year, mon);
  const int dow = tcal.DayOfWeek();
  if (dow == 7 && *day == 1) {
    *day += 2;
  } else if (dow == 7) {
    *day -= 1;
  } else if (dow == 1 && *day == ldom) {
    *day -= 2;
  } else if (dow == 1) {
    *day += 1;
  }
  // The year is the one the calendar normalized to (Quartz sets it first).
  tcal.SetSecond(sec);
  tcal.SetMinute(min);
  tcal.SetHour(hr);
  tcal.SetDay(*day);
  tcal.SetMonth(mon);
  return tcal.Time();
}

}  // namespace

absl::StatusOr<CronExpression> CronExpression::Parse(absl::string_view expression,
                                                     absl::string_view time_zone) {
  auto rep = std::make_shared<CronRep>();
  rep->expression = std::string(expression);

  if (time_zone.empty()) time_zone = "UTC";
  if (!IsPlausibleZoneName(time_zone) ||
      !absl::LoadTimeZone(std::string(time_zone), &rep->time_zone)) {
    return absl::InvalidArgumentError(
        absl::StrCat("time_zone: unknown time zone ", Quoted(time_zone)));
  }

  const std::string prefix = absl::StrCat("cron expression ", Quoted(expression), ": ");
  // Quartz upper-cases, splits on spaces and tabs only, trims each field of
  // characters up to ' ' (so a trailing newline is fine), and ignores fields
  // after the seventh.
  const std::string upper = absl::AsciiStrToUpper(expression);
  std::vector<absl::string_view> fields;
  {
    absl::string_view rest = upper;
    while (!rest.empty() && fields.size() < 7) {
      const size_t begin = rest.find_first_not_of(" \t");
      if (begin == absl::string_view::npos) break;
      rest.remove_prefix(begin);
      size_t end = rest.find_first_of(" \t");
      if (end == absl::string_view::npos) end = rest.size();
      absl::string_view token = rest.substr(0, end);
      rest.remove_prefix(end);
      while (!token.empty() && static_cast<unsigned char>(token.front()) <= ' ') {
        token.remove_prefix(1);
      }
      while (!token.empty() && static_cast<unsigned char>(token.back()) <= ' ') {
        token.remove_suffix(1);
      }
      fields.push_back(token);
    }
  }
  if (fields.size() < 6) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix,
                     "expected 6 or 7 fields (second minute hour day-of-month month "
                     "day-of-week [year]), got ",
                     fields.size()));
  }
  if (fields.size() == 6) fields.push_back("*");

  std::set<int> sets[7];
  for (int f = 0; f < 7; ++f) {
    const absl::string_view text = fields[f];
    absl::Status status;
    if (f == kDayOfMonth && text.size() > 1 && absl::StrContains(text, 'L') &&
        absl::StrContains(text, ',')) {
      status = absl::InvalidArgumentError("'L' cannot be combined with other days of the month");
    } else if (f == kDayOfWeek && text.size() > 1 && absl::StrContains(text, 'L') &&
               absl::StrContains(text, ',')) {
      status = absl::InvalidArgumentError("'L' cannot be combined with other days of the week");
    } else if (f == kDayOfWeek && std::count(text.begin(), text.end(), '#') > 1) {
      status = absl::InvalidArgumentError("only one '#' is supported");
    } else {
      FieldParser parser(*rep, static_cast<Field>(f), sets);
      // Empty items (",,") are skipped, as by Java's StringTokenizer.
      size_t begin = 0;
      while (status.ok() && begin <= text.size()) {
        size_t end = text.find(',', begin);
        if (end == absl::string_view::npos) end = text.size();
        if (end > begin) status = parser.Item(text.substr(begin, end - begin));
        begin = end + 1;
      }
    }
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, "field ", kFieldNames[f], ": ", status.message()));
    }
  }
  const bool dom_given = sets[kDayOfMonth].count(kNoSpec) == 0;
  const bool dow_given = sets[kDayOfWeek].count(kNoSpec) == 0;
  if (dom_given == dow_given) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix,
                     "field day-of-week: exactly one of day-of-month and "
                     "day-of-week must be '?'"));
  }
  for (int f = 0; f < 7; ++f) {
    rep->fields[f].assign(sets[f].begin(), sets[f].end());
  }
  return CronExpression(std::move(rep));
}

CronSearch CronExpression::Search(absl::Time after) const {
  const CronRep& rep = *rep_;
  const ValueSet& seconds = rep.fields[kSecond];
  const ValueSet& minutes = rep.fields[kMinute];
  const ValueSet& hours = rep.fields[kHour];
  const ValueSet& days_of_month = rep.fields[kDayOfMonth];
  const ValueSet& months = rep.fields[kMonth];
  const ValueSet& days_of_week = rep.fields[kDayOfWeek];
  const ValueSet& years = rep.fields[kYear];
  CronSearch result;
  result.stop = CronSearch::kNever;
  if (after == absl::InfiniteFuture()) return result;
  // Keeps civil arithmetic away from infinities and before 1900 (Java's
  // calendar turns Julian in 1582); `*` years start at 1970 anyway.
  const absl::Time earliest = absl::FromUnixSeconds(-2208988800);
  if (after < earliest) after = earliest;
  if (after > absl::FromUnixSeconds(int64_t{1} << 40)) return result;

  // Quartz starts one second later; the calendar drops the milliseconds and
  // re-reads the civil time, so a start in the first pass through a repeated
  // hour goes on from the same wall-clock time in the second pass.
  const absl::Time start = after + absl::Seconds(1);
  JavaCalendar cl(rep.time_zone);
  {
    const absl::CivilSecond c = absl::ToCivilSecond(start, rep.time_zone);
    cl.SetCivil(c.year(), c.month(), c.day(), c.hour(), c.minute(), c.second());
  }
  // Quartz compares candidate days with the start to the millisecond.
  auto before_start = [&](absl::Time t) { return t < start; };

  // Cycle detection (Brent): the loop is a function of the calendar's
  // instant, so a repeated instant means Quartz would loop forever.
  absl::Time tortoise = absl::InfinitePast();
  int64_t power = 1;
  int64_t lambda = 0;
  // Quartz throws NoSuchElementException when it needs the first value of a
  // field that has none (`0 0 L * * ?`: `L` adds no hour); we stop there.
  auto first = [&](const ValueSet& set, int64_t* out) {
    std::optional<int> v = First(set);
    if (!v.has_value()) return false;
    *out = *v;
    return true;
  };
  {
    while (true) {
      if (cl.Year() > 2999) return result;
      {
        const absl::Time now = cl.Time();
        if (now == tortoise || cl.Year() < 1) {
          result.stop = CronSearch::kQuartzLoops;
          return result;
        }
        if (lambda == power) {
          tortoise = now;
          power *= 2;
          lambda = 0;
        }
        ++lambda;
      }

      // Second.
      int64_t sec = cl.Second();
      int64_t min = cl.Minute();
      if (std::optional<int> s = Tail(seconds, sec)) {
        sec = *s;
      } else {
        if (!first(seconds, &sec)) {
          result.stop = CronSearch::kQuartzThrows;
          return result;
        }
        ++min;
        cl.SetMinute(min);
      }
      cl.SetSecond(sec);

      // Minute.
      min = cl.Minute();
      int64_t hr = cl.Hour();
      int64_t t = -1;
      if (std::optional<int> m = Tail(minutes, min)) {
        t = min;
        min = *m;
      } else {
        if (!first(minutes, &min)) {
          result.stop = CronSearch::kQuartzThrows;
          return result;
        }
        ++hr;
      }
      // Quartz's setCalendarHour: if a gap moved the hour, ask for one more.
      auto set_hour = [&](int64_t hour) {
        cl.SetHour(hour);
        if (cl.Hour() != hour && hour != 24) cl.SetHour(hour + 1);
      };
      if (min != t) {
        cl.SetSecond(0);
        cl.SetMinute(min);
        set_hour(hr);
        continue;
      }
      cl.SetMinute(min);

      // Hour.
      hr = cl.Hour();
      int64_t day = cl.Day();
      t = -1;
      if (std::optional<int> h = Tail(hours, hr)) {
        t = hr;
        hr = *h;
      } else {
        if (!first(hours, &hr)) {
          result.stop = CronSearch::kQuartzThrows;
          return result;
        }
        ++day;
      }
      if (hr != t) {
        cl.SetSecond(0);
        cl.SetMinute(0);
        cl.SetDay(day);
        set_hour(hr);
        continue;
      }
      cl.SetHour(hr);

      // Day.
      day = cl.Day();
      int64_t mon = cl.Month();
      t = -1;
      int64_t tmon = mon;
      const bool dom_given = !Contains(days_of_month, kNoSpec);
      const bool dow_given = !Contains(days_of_week, kNoSpec);
      if (dom_given && !dow_given) {
        const std::optional<int> st = Tail(days_of_month, day);
        if (rep.last_day_of_month) {
          t = day;
          day = DaysInMonth(cl.Year(), static_cast<int>(mon)) - rep.last_day_offset;
          if (!rep.nearest_weekday) {
            if (t > day) {
              ++mon;
              if (mon > 12) {
                mon = 1;
                tmon = 3333;  // Forces the change below, as in Quartz.
                cl.AddYear();
              }
              day = 1;
            }
          } else {
            int d = static_cast<int>(day);
            const absl::Time n =
                NearestWeekday(rep.time_zone, cl.Year(), static_cast<int>(mon), &d,
                               static_cast<int>(hr), static_cast<int>(min), static_cast<int>(sec));
            day = d;
            if (before_start(n)) {
              day = 1;
              ++mon;
            }
          }
        } else if (rep.nearest_weekday) {
          // Only the first day of the set counts (`15W,20` is `15W`); a day
          // the month lacks rolls into the next month, as Java's lenient
          // calendar does (31W in February fires in early March).
          t = day;
          int64_t first_day = 0;
          if (!first(days_of_month, &first_day)) {
            result.stop = CronSearch::kQuartzThrows;
            return result;
          }
          int d = static_cast<int>(first_day);
          const absl::Time n =
              NearestWeekday(rep.time_zone, cl.Year(), static_cast<int>(mon), &d,
                             static_cast<int>(hr), static_cast<int>(min), static_cast<int>(sec));
          day = d;
          if (before_start(n)) {
            day = first_day;
            ++mon;
          }
        } else if (st.has_value()) {
          t = day;
          day = *st;
          if (day > DaysInMonth(cl.Year(), static_cast<int>(mon))) {
            if (!first(days_of_month, &day)) {
              result.stop = CronSearch::kQuartzThrows;
              return result;
            }
            ++mon;
          }
        } else {
          if (!first(days_of_month, &day)) {
            result.stop = CronSearch::kQuartzThrows;
            return result;
          }
          ++mon;
        }
        if (day != t || mon != tmon) {
          cl.SetSecond(0);
          cl.SetMinute(0);
          cl.SetHour(0);
          cl.SetDay(day);
          cl.SetMonth(mon);
          continue;
        }
      } else if (dow_given && !dom_given) {
        const int64_t last_day = DaysInMonth(cl.Year(), static_cast<int>(mon));
        if (rep.last_day_of_week) {
          int64_t dow = 0;
          if (!first(days_of_week, &dow)) {
            result.stop = CronSearch::kQuartzThrows;
            return result;
          }
          const int cdow = cl.DayOfWeek();
          int64_t add = cdow < dow ? dow - cdow : cdow > dow ? dow + 7 - cdow : 0;
          if (day + add > last_day) {
            cl.SetSecond(0);
            cl.SetMinute(0);
            cl.SetHour(0);
            cl.SetDay(1);
            cl.SetMonth(mon + 1);
            continue;
          }
          while (day + add + 7 <= last_day) add += 7;
          day += add;
          if (add > 0) {
            cl.SetSecond(0);
            cl.SetMinute(0);
            cl.SetHour(0);
            cl.SetDay(day);
            cl.SetMonth(mon);
            continue;
          }
        } else if (rep.nth_day_of_week != 0) {
          int64_t dow = 0;
          if (!first(days_of_week, &dow)) {
            result.stop = CronSearch::kQuartzThrows;
            return result;
          }
          const int cdow = cl.DayOfWeek();
          int64_t add = cdow < dow ? dow - cdow : cdow > dow ? dow + 7 - cdow : 0;
          const bool shifted = add > 0;
          day += add;
          int64_t week = day / 7;
          if (day % 7 > 0) ++week;
          add = (rep.nth_day_of_week - week) * 7;
          day += add;
          if (add < 0 || day > last_day) {
            cl.SetSecond(0);
            cl.SetMinute(0);
            cl.SetHour(0);
            cl.SetDay(1);
            cl.SetMonth(mon + 1);
            continue;
          }
          if (add > 0 || shifted) {
            cl.SetSecond(0);
            cl.SetMinute(0);
            cl.SetHour(0);
            cl.SetDay(day);
            cl.SetMonth(mon);
            continue;
          }
        } else {
          const int cdow = cl.DayOfWeek();
          int64_t dow = 0;
          if (!first(days_of_week, &dow)) {
            result.stop = CronSearch::kQuartzThrows;
            return result;
          }
          if (std::optional<int> d = Tail(days_of_week, cdow)) dow = *d;
          const int64_t add = cdow < dow ? dow - cdow : cdow > dow ? dow + 7 - cdow : 0;
          if (day + add > last_day) {
            cl.SetSecond(0);
            cl.SetMinute(0);
            cl.SetHour(0);
            cl.SetDay(1);
            cl.SetMonth(mon + 1);
            continue;
          }
          if (add > 0) {
            cl.SetSecond(0);
            cl.SetMinute(0);
            cl.SetHour(0);
            cl.SetDay(day + add);
            cl.SetMonth(mon);
            continue;
          }
        }
      }
      cl.SetDay(day);

      // Month.
      mon = cl.Month();
      int64_t year = cl.Year();
      t = -1;
      if (year > kCronMaxYear) return result;
      if (std::optional<int> m = Tail(months, mon)) {
        t = mon;
        mon = *m;
      } else {
        if (!first(months, &mon)) {
          result.stop = CronSearch::kQuartzThrows;
          return result;
        }
        ++year;
      }
      if (mon != t) {
        cl.SetSecond(0);
        cl.SetMinute(0);
        cl.SetHour(0);
        cl.SetDay(1);
        cl.SetMonth(mon);
        cl.SetYear(year);
        continue;
      }
      cl.SetMonth(mon);

      // Year.
      year = cl.Year();
      t = -1;
      if (std::optional<int> y = Tail(years, year)) {
        t = year;
        year = *y;
      } else {
        return result;
      }
      if (year != t) {
        cl.SetSecond(0);
        cl.SetMinute(0);
        cl.SetHour(0);
        cl.SetDay(1);
        cl.SetMonth(1);
        cl.SetYear(year);
        continue;
      }
      cl.SetYear(year);
      result.stop = CronSearch::kFired;
      result.time = cl.Time();
      return result;
    }
  }
}

std::optional<absl::Time> CronExpression::NextAfter(absl::Time after) const {
  CronSearch search = Search(after);
  // Quartz answers are always later than `after` in practice; a schedule must
  // never go backwards, so anything else counts as "no more fire times".
  if (search.time.has_value() && *search.time <= after) return std::nullopt;
  return search.time;
}

const std::string& CronExpression::expression() const { return rep_->expression; }

const absl::TimeZone& CronExpression::time_zone() const { return rep_->time_zone; }

}  // namespace jobwheel::scheduler
