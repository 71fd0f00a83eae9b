#include "services/scheduler/cron_parser.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "services/scheduler/cron_rep.h"

// Accepts exactly what Quartz 2.3.2's CronExpression accepts and reads it the
// same way, quirks included (see cron.h): XXL-JOB users write expressions
// against Quartz.

namespace jobwheel::scheduler::cron_internal {
namespace {

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

// Quartz upper-cases, splits on spaces and tabs only, trims each field of
// characters up to ' ' (so a trailing newline is fine), and ignores fields
// after the seventh. The views point into `upper`.
std::vector<absl::string_view> SplitFields(absl::string_view upper) {
  std::vector<absl::string_view> fields;
  absl::string_view rest = upper;
  while (!rest.empty() && fields.size() < kFieldCount) {
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
  return fields;
}

// One field's text into sets[field]; a plain reason on error.
absl::Status ParseField(CronRep& rep, Field field, absl::string_view text, std::set<int>* sets) {
  if (field == kDayOfMonth && text.size() > 1 && absl::StrContains(text, 'L') &&
      absl::StrContains(text, ',')) {
    return absl::InvalidArgumentError("'L' cannot be combined with other days of the month");
  }
  if (field == kDayOfWeek && text.size() > 1 && absl::StrContains(text, 'L') &&
      absl::StrContains(text, ',')) {
    return absl::InvalidArgumentError("'L' cannot be combined with other days of the week");
  }
  if (field == kDayOfWeek && std::count(text.begin(), text.end(), '#') > 1) {
    return absl::InvalidArgumentError("only one '#' is supported");
  }
  FieldParser parser(rep, field, sets);
  // Empty items (",,") are skipped, as by Java's StringTokenizer.
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == absl::string_view::npos) end = text.size();
    if (end > begin) {
      absl::Status status = parser.Item(text.substr(begin, end - begin));
      if (!status.ok()) return status;
    }
    begin = end + 1;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CronRep> ParseCron(absl::string_view expression, absl::string_view time_zone) {
  CronRep rep;
  rep.expression = std::string(expression);

  if (time_zone.empty()) time_zone = "UTC";
  if (!IsPlausibleZoneName(time_zone) ||
      !absl::LoadTimeZone(std::string(time_zone), &rep.time_zone)) {
    return absl::InvalidArgumentError(
        absl::StrCat("time_zone: unknown time zone ", Quoted(time_zone)));
  }

  const std::string prefix = absl::StrCat("cron expression ", Quoted(expression), ": ");
  const std::string upper = absl::AsciiStrToUpper(expression);
  std::vector<absl::string_view> fields = SplitFields(upper);
  if (fields.size() < 6) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix,
                     "expected 6 or 7 fields (second minute hour day-of-month month "
                     "day-of-week [year]), got ",
                     fields.size()));
  }
  if (fields.size() == 6) fields.push_back("*");

  std::set<int> sets[kFieldCount];
  for (int f = 0; f < kFieldCount; ++f) {
    absl::Status status = ParseField(rep, static_cast<Field>(f), fields[f], sets);
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
  for (int f = 0; f < kFieldCount; ++f) {
    rep.fields[f].assign(sets[f].begin(), sets[f].end());
  }
  return rep;
}

}  // namespace jobwheel::scheduler::cron_internal
