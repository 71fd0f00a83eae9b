// Compares CronExpression::NextAfter with a brute-force search over civil
// seconds for about 3,500 random expressions built from a seeded
// std::mt19937. The expressions are generated as structured values, rendered
// to text for the parser, and matched here by an independent predicate that
// reads the structure directly (it shares no code with cron.cc). Around DST
// the brute force applies Quartz 2.3.2's policy as stated below (BruteNext,
// PassedOver), not as cron.cc computes it.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "services/scheduler/cron.h"

namespace jobwheel::scheduler {
namespace {

constexpr const char* kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char* kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

// One comma-separated item of a plain field.
struct Item {
  enum Kind { kStar, kStarStep, kSlashStep, kValue, kValueStep, kRange, kRangeStep };
  Kind kind = kStar;
  int a = 0;
  int b = 0;
  int step = 1;
  bool name_a = false;  // Render `a` as a name (month, day-of-week).
  bool name_b = false;  // Render `b` as a name.
};

struct Field {
  Field(int min, int max) : min(min), max(max) {}
  int min;
  int max;
  std::vector<Item> items;
};

struct Expr {
  Field second{0, 59}, minute{0, 59}, hour{0, 23}, month{1, 12}, year{1970, 2099};
  bool has_year = false;
  enum DayOfMonth { kDomNone, kDomList, kDomLast, kDomNearest, kDomLastWeekday };
  DayOfMonth dom = kDomNone;
  Field dom_list{1, 31};
  int dom_value = 0;  // L-n offset, or the day of nW
  enum DayOfWeek { kDowNone, kDowList, kDowNth, kDowLastOf, kDowSaturdayL };
  DayOfWeek dow = kDowNone;
  Field dow_list{1, 7};
  int dow_value = 0;
  int dow_nth = 0;
  std::string text;
};

// ---------------------------------------------------------------------------
// The brute-force matcher.

bool ItemMatches(const Item& item, const Field& f, int v) {
  const int span = f.max - f.min + 1;
  switch (item.kind) {
    case Item::kStar:
      return true;
    case Item::kStarStep:
    case Item::kSlashStep:
      return (v - f.min) % item.step == 0;
    case Item::kValue:
      return v == item.a;
    case Item::kValueStep:
      return v >= item.a && (v - item.a) % item.step == 0;
    case Item::kRange:
    case Item::kRangeStep: {
      const int step = item.kind == Item::kRange ? 1 : item.step;
      if (item.a <= item.b) {
        return v >= item.a && v <= item.b && (v - item.a) % step == 0;
      }
      // Wrap-around: a, a+step, ... up to b + span, each taken mod span.
      const int d = ((v - item.a) % span + span) % span;
      return item.a + d <= item.b + span && d % step == 0;
    }
  }
  return false;
}

bool FieldMatches(const Field& f, int v) {
  for (const Item& item : f.items) {
    if (ItemMatches(item, f, v)) return true;
  }
  return false;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysIn(int y, int m) {
  if (m == 2) return IsLeap(y) ? 29 : 28;
  return (m == 4 || m == 6 || m == 9 || m == 11) ? 30 : 31;
}

// 1=Sunday ... 7=Saturday (Sakamoto's method).
int Weekday(int y, int m, int d) {
  static const int t[] = {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4};
  if (m < 3) y -= 1;
  return (y + y / 4 - y / 100 + y / 400 + t[m - 1] + d) % 7 + 1;
}

bool IsBusinessDay(int y, int m, int d) {
  const int w = Weekday(y, m, d);
  return w != 1 && w != 7;
}

// The weekday of the month closest to `target` (Quartz's W; never a tie).
bool IsNearestWeekday(int y, int m, int d, int target) {
  const int dim = DaysIn(y, m);
  if (target < 1 || target > dim || !IsBusinessDay(y, m, d)) return false;
  for (int other = 1; other <= dim; ++other) {
    if (IsBusinessDay(y, m, other) && std::abs(other - target) < std::abs(d - target)) {
      return false;
    }
  }
  return true;
}

bool DayMatches(const Expr& e, int y, int m, int d) {
  if (!FieldMatches(e.month, m)) return false;
  if (e.has_year && !FieldMatches(e.year, y)) return false;
  const int dim = DaysIn(y, m);
  switch (e.dom) {
    case Expr::kDomList:
      return FieldMatches(e.dom_list, d);
    case Expr::kDomLast:
      return d == dim - e.dom_value;
    case Expr::kDomNearest:
      return IsNearestWeekday(y, m, d, e.dom_value);
    case Expr::kDomLastWeekday:
      return IsNearestWeekday(y, m, d, dim - e.dom_value);
    case Expr::kDomNone:
      break;
  }
  const int w = Weekday(y, m, d);
  switch (e.dow) {
    case Expr::kDowList:
      return FieldMatches(e.dow_list, w);
    case Expr::kDowNth:
      return w == e.dow_value && (d - 1) / 7 + 1 == e.dow_nth;
    case Expr::kDowLastOf:
      return w == e.dow_value && d + 7 > dim;
    case Expr::kDowSaturdayL:
      return w == 7;
    case Expr::kDowNone:
      break;
  }
  return false;
}

bool Matches(const Expr& e, absl::CivilSecond c) {
  return c.year() >= 1970 && c.year() <= 2099 &&
         DayMatches(e, static_cast<int>(c.year()), c.month(), c.day()) &&
         FieldMatches(e.hour, c.hour()) && FieldMatches(e.minute, c.minute()) &&
         FieldMatches(e.second, c.second());
}

// ---------------------------------------------------------------------------
// The DST policy (Quartz 2.3.2's, see cron.h), stated on its own terms rather
// than as cron.cc computes it (a field-by-field walk through a model of Java's
// Calendar):
//  * the search starts at s, the civil second of `after` + 1s (in whichever
//    pass through a repeated interval that instant is);
//  * the answer is the first civil time c >= s that matches, exists (is not
//    in a spring-forward gap) and is not passed over (PassedOver);
//  * c fires at its instant, at its second occurrence if it is repeated.

// Java's Calendar shows a civil time in a gap moved forward by the gap (it
// uses the pre-transition offset); other civil times are kept.
absl::CivilSecond JavaCalendarTime(const absl::TimeZone& tz, absl::CivilSecond c) {
  const absl::TimeZone::TimeInfo info = tz.At(c);
  return info.kind == absl::TimeZone::TimeInfo::SKIPPED ? absl::ToCivilSecond(info.pre, tz) : c;
}

// The civil times that Quartz passes over when searching from s, as a range
// [first, end) (empty if none). Quartz fixes s's second, then its minute; if
// no later second of s's minute and no later minute of s's hour match, it
// carries into the next hour at (first matching minute, second 0). When that
// time is inside a gap beginning at that hour, Java moves it forward by the
// gap, and Quartz (setCalendarHour) sets the hour after the one it meant if
// the move changed the hour; the search goes on from there, so the existing
// times between the end of the gap and there are passed over. That range can
// hold matches only for gaps shorter than an hour (Australia/Lord_Howe's).
// (A carry in the seconds, from the hour's last minute, enters at minute 0
// and passes over only seconds that do not match.) The gaps of the zones
// tested here all begin on the hour, which this rule relies on.
std::pair<absl::CivilSecond, absl::CivilSecond> PassedOver(const Expr& e, const absl::TimeZone& tz,
                                                           absl::CivilSecond s) {
  const std::pair<absl::CivilSecond, absl::CivilSecond> none(s, s);
  const absl::CivilSecond gap_begin(absl::CivilHour(s) + 1);
  const absl::TimeZone::TimeInfo gap = tz.At(gap_begin);
  if (gap.kind != absl::TimeZone::TimeInfo::SKIPPED ||
      tz.At(gap_begin - 1).kind == absl::TimeZone::TimeInfo::SKIPPED) {
    return none;  // No gap begins at the next hour.
  }
  const absl::CivilSecond gap_end = absl::ToCivilSecond(gap.trans, tz);
  int minute = s.minute();
  bool second_left = false;
  for (int sec = s.second(); sec < 60; ++sec) {
    second_left = second_left || FieldMatches(e.second, sec);
  }
  if (!second_left) {
    if (minute == 59) return none;
    ++minute;
  }
  int first_minute = -1;
  for (int m = 59; m >= 0; --m) {
    if (!FieldMatches(e.minute, m)) continue;
    if (m >= minute) return none;  // Found in s's hour.
    first_minute = m;
  }
  const int hour = s.hour() + 1;  // What Quartz sets; 24 is the next midnight.
  absl::CivilSecond resume = JavaCalendarTime(tz, gap_begin + 60 * first_minute);
  if (resume.hour() != hour && hour != 24) {
    resume = JavaCalendarTime(tz, absl::CivilSecond(resume.year(), resume.month(), resume.day(),
                                                    hour + 1, resume.minute(), resume.second()));
  }
  return {gap_end, std::max(gap_end, resume)};
}

// The fire time after `after` per the policy above, walking civil seconds in
// order from s. Days, hours and minutes whose field does not match are skipped
// whole, which is the same as testing each of their seconds with Matches().
// Counts in `*passed_over` the searches where PassedOver decided the answer.
std::optional<absl::Time> BruteNext(const Expr& e, const absl::TimeZone& tz, absl::Time after,
                                    int* passed_over) {
  const absl::CivilSecond start = absl::ToCivilSecond(after + absl::Seconds(1), tz);
  const auto [skip_from, skip_to] = PassedOver(e, tz, start);
  bool skipped_a_match = false;
  for (absl::CivilDay day(start); day.year() <= 2099; ++day) {
    if (day.year() < 1970 || !DayMatches(e, static_cast<int>(day.year()), day.month(), day.day())) {
      continue;
    }
    for (int h = 0; h < 24; ++h) {
      if (!FieldMatches(e.hour, h)) continue;
      for (int mi = 0; mi < 60; ++mi) {
        if (!FieldMatches(e.minute, mi)) continue;
        for (int s = 0; s < 60; ++s) {
          const absl::CivilSecond c(day.year(), day.month(), day.day(), h, mi, s);
          if (c < start || !Matches(e, c)) continue;
          const absl::TimeZone::TimeInfo info = tz.At(c);
          if (info.kind == absl::TimeZone::TimeInfo::SKIPPED) continue;
          if (c >= skip_from && c < skip_to) {
            skipped_a_match = true;
            continue;
          }
          if (skipped_a_match) ++*passed_over;
          return info.kind == absl::TimeZone::TimeInfo::REPEATED ? info.post : info.pre;
        }
      }
    }
  }
  if (skipped_a_match) ++*passed_over;
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// The generator.

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  // A value of field f, often an edge of the range (and, for days of the
  // month, often a day that short months lack).
  int Value(const Field& f) {
    if (f.min == 1 && f.max == 31 && Chance(0.4)) {
      static constexpr int kDays[] = {1, 2, 15, 28, 29, 30, 31};
      return kDays[Uniform(0, 6)];
    }
    if (Chance(0.15)) return Chance(0.5) ? f.min : f.max;
    return Uniform(f.min, f.max);
  }

  Item RandomItem(const Field& f, const char* const* names) {
    Item item;
    const int max_step = f.max - f.min;  // Quartz's limit is max - min.
    switch (Uniform(0, 9)) {
      case 0:
        item.kind = Item::kStar;
        break;
      case 1:
        item.kind = Item::kStarStep;
        item.step = Uniform(1, max_step);
        break;
      case 2:
        item.kind = Item::kSlashStep;
        item.step = Uniform(1, max_step);
        break;
      case 3:
      case 4:
        item.kind = Item::kValue;
        item.a = Value(f);
        item.name_a = names != nullptr && Chance(0.5);
        break;
      case 5:
        item.kind = Item::kValueStep;
        item.a = Value(f);
        item.step = Uniform(1, max_step);
        break;
      case 6:
      case 7:
        item.kind = Item::kRange;
        item.a = Value(f);
        item.b = Value(f);
        // Both ends names or both numbers: Quartz rejects `OCT-1` and `1-OCT`.
        item.name_a = names != nullptr && Chance(0.5);
        item.name_b = item.name_a;
        break;
      default:
        item.kind = Item::kRangeStep;
        item.a = Value(f);
        item.b = Value(f);
        item.step = Uniform(1, std::min(max_step, 10));
        break;
    }
    const bool is_range = item.kind == Item::kRange || item.kind == Item::kRangeStep;
    if (f.min == 1970 && is_range && item.a > item.b) {
      std::swap(item.a, item.b);  // Year ranges do not wrap.
    }
    return item;
  }

  int LastDayOffset() {
    static constexpr int kOffsets[] = {1, 2, 3, 27, 28, 29, 30};
    return Chance(0.5) ? kOffsets[Uniform(0, 6)] : Uniform(0, 30);
  }

  // A list of 1-3 items; or, half the time for the fast fields, one value so
  // the expression fires rarely enough to exercise carries.
  void RandomField(Field& f, const char* const* names, double single_p) {
    if (Chance(single_p)) {
      Item item;
      item.kind = Item::kValue;
      item.a = Value(f);
      f.items.push_back(item);
      return;
    }
    const int n = Chance(0.6) ? 1 : Uniform(2, 3);
    for (int i = 0; i < n; ++i) f.items.push_back(RandomItem(f, names));
  }

  std::string Name(const char* name) {
    std::string s = name;
    switch (Uniform(0, 2)) {
      case 0:
        return s;
      case 1:
        return absl::AsciiStrToLower(s);
      default:
        s[1] = absl::ascii_tolower(s[1]);
        s[2] = absl::ascii_tolower(s[2]);
        return s;
    }
  }

  std::string Render(const Field& f, const char* const* names) {
    std::vector<std::string> parts;
    for (const Item& item : f.items) {
      auto value = [&](int v, bool as_name) {
        return as_name ? Name(names[v - f.min]) : absl::StrCat(v);
      };
      switch (item.kind) {
        case Item::kStar:
          parts.push_back("*");
          break;
        case Item::kStarStep:
          parts.push_back(absl::StrCat("*/", item.step));
          break;
        case Item::kSlashStep:
          parts.push_back(absl::StrCat("/", item.step));
          break;
        case Item::kValue:
          parts.push_back(value(item.a, item.name_a));
          break;
        case Item::kValueStep:
          parts.push_back(absl::StrCat(item.a, "/", item.step));
          break;
        case Item::kRange:
          parts.push_back(
              absl::StrCat(value(item.a, item.name_a), "-", value(item.b, item.name_b)));
          break;
        case Item::kRangeStep:
          parts.push_back(absl::StrCat(item.a, "-", item.b, "/", item.step));
          break;
      }
    }
    return absl::StrJoin(parts, ",");
  }

  // With `daily`, the expression fires every day (month `*`, a day field
  // `*`, no year), so that DST days are exercised.
  Expr RandomExpr(bool daily = false) {
    Expr e;
    RandomField(e.second, nullptr, 0.6);
    RandomField(e.minute, nullptr, 0.5);
    if (daily && Chance(0.6)) {
      // Hours around the usual transition times (00:00-04:00).
      Item item;
      item.kind = Chance(0.7) ? Item::kRange : Item::kRangeStep;
      item.a = Uniform(0, 2);
      item.b = Uniform(2, 4);
      item.step = Uniform(1, 2);
      e.hour.items.push_back(item);
    } else {
      RandomField(e.hour, nullptr, 0.4);
    }
    if (daily || Chance(0.5)) {
      Item star;
      e.month.items.push_back(star);
    } else {
      RandomField(e.month, kMonthNames, 0.2);
    }
    std::string dom_text = "?";
    std::string dow_text = "?";
    if (daily) {
      Item star;
      if (Chance(0.5)) {
        e.dom = Expr::kDomList;
        e.dom_list.items.push_back(star);
        dom_text = "*";
      } else {
        e.dow = Expr::kDowList;
        e.dow_list.items.push_back(star);
        dow_text = "*";
      }
    } else if (Chance(0.5)) {
      switch (Uniform(0, 6)) {
        case 0:
        case 1:
        case 2:
          e.dom = Expr::kDomList;
          RandomField(e.dom_list, nullptr, 0.3);
          dom_text = Render(e.dom_list, nullptr);
          break;
        case 3:
          e.dom = Expr::kDomLast;
          e.dom_value = Chance(0.4) ? 0 : LastDayOffset();
          dom_text = e.dom_value == 0 && Chance(0.5) ? "L" : absl::StrCat("L-", e.dom_value);
          break;
        case 4:
          e.dom = Expr::kDomLastWeekday;
          // Offsets past 27 reach day 0 or before in February, where Quartz
          // rolls back into January or loops (tests/cron covers them).
          e.dom_value = Chance(0.5) ? 0 : std::min(LastDayOffset(), 27);
          dom_text = e.dom_value == 0 && Chance(0.5) ? "LW" : absl::StrCat("L-", e.dom_value, "W");
          break;
        default:
          e.dom = Expr::kDomNearest;
          // Days past 28 roll into the next month in short months, as in
          // Quartz (cron_test and tests/cron cover them).
          e.dom_value = std::min(Value(e.dom_list), 28);
          dom_text = absl::StrCat(e.dom_value, "W");
          break;
      }
    } else {
      auto day_text = [&](int w) { return Chance(0.5) ? Name(kDayNames[w - 1]) : absl::StrCat(w); };
      switch (Uniform(0, 6)) {
        case 0:
        case 1:
        case 2:
          e.dow = Expr::kDowList;
          RandomField(e.dow_list, kDayNames, 0.3);
          dow_text = Render(e.dow_list, kDayNames);
          break;
        case 3:
          e.dow = Expr::kDowSaturdayL;
          dow_text = "L";
          break;
        case 4:
          e.dow = Expr::kDowLastOf;
          e.dow_value = Uniform(1, 7);
          dow_text = absl::StrCat(day_text(e.dow_value), "L");
          break;
        default:
          e.dow = Expr::kDowNth;
          e.dow_value = Uniform(1, 7);
          e.dow_nth = Uniform(1, 5);
          dow_text = absl::StrCat(day_text(e.dow_value), "#", e.dow_nth);
          break;
      }
    }
    std::vector<std::string> fields = {Render(e.second, nullptr),    Render(e.minute, nullptr),
                                       Render(e.hour, nullptr),      dom_text,
                                       Render(e.month, kMonthNames), dow_text};
    if (!daily && Chance(0.25)) {
      e.has_year = true;
      RandomField(e.year, nullptr, 0.2);
      fields.push_back(Render(e.year, nullptr));
    }
    const char* separators[] = {" ", " ", "  ", "\t"};
    e.text = Chance(0.1) ? " " : "";
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) e.text += separators[Uniform(0, 3)];
      e.text += fields[i];
    }
    return e;
  }

  // A whole second or a fraction past one, 1970-2099.
  absl::Time RandomTime() {
    const int64_t lo = 0;               // 1970-01-01
    const int64_t hi = 4102444800 - 1;  // 2099-12-31T23:59:59Z
    int64_t s = std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
    absl::Time t = absl::FromUnixSeconds(s);
    if (Chance(0.2)) t += absl::Milliseconds(Uniform(1, 999));
    return t;
  }

 private:
  std::mt19937 rng_;
};

// Checks a chain of 5 successive fire times against the brute force; adds to
// `*passed_over` the steps where PassedOver decided the answer.
void CheckChain(const Expr& e, absl::string_view zone, absl::Time after,
                int* passed_over = nullptr) {
  int unused = 0;
  if (passed_over == nullptr) passed_over = &unused;
  absl::TimeZone tz;
  ASSERT_TRUE(absl::LoadTimeZone(std::string(zone), &tz));
  SCOPED_TRACE(absl::StrCat("expression \"", e.text, "\" zone ", zone, " after ",
                            absl::FormatTime(after, tz)));
  absl::StatusOr<CronExpression> cron = CronExpression::Parse(e.text, zone);
  ASSERT_TRUE(cron.ok()) << cron.status();
  absl::Time t = after;
  for (int i = 0; i < 5; ++i) {
    // Where Quartz never returns (LW on a day a zone skipped, as Pacific/Apia
    // did 2011-12-30), there is no fire time to compare; tests/cron checks
    // that Quartz loops there too.
    if (cron->Search(t).stop == CronSearch::kQuartzLoops) return;
    std::optional<absl::Time> want = BruteNext(e, tz, t, passed_over);
    std::optional<absl::Time> got = cron->NextAfter(t);
    auto show = [&](std::optional<absl::Time> x) {
      return x.has_value() ? absl::FormatTime("%Y-%m-%dT%H:%M:%S%Ez %a", *x, tz)
                           : std::string("nullopt");
    };
    ASSERT_EQ(got, want) << "step " << i << ": got " << show(got) << ", want " << show(want);
    if (!got.has_value()) return;
    t = *got;
  }
}

TEST(CronPropertyTest, MatchesBruteForceInUtc) {
  Generator gen(20240607);
  for (int i = 0; i < 1000; ++i) {
    const Expr e = gen.RandomExpr();
    CheckChain(e, "UTC", gen.RandomTime());
    if (HasFatalFailure()) return;
  }
}

TEST(CronPropertyTest, MatchesBruteForceNearTheYear2099Limit) {
  Generator gen(7);
  for (int i = 0; i < 60; ++i) {
    const Expr e = gen.RandomExpr();
    CheckChain(e, "UTC", absl::FromUnixSeconds(4102444800 - gen.Uniform(1, 90 * 86400)));
    if (HasFatalFailure()) return;
  }
}

// A random transition of `zone` after a random instant of 1985-2030 (for
// Asia/Shanghai, which had DST in 1986-1991, and Pacific/Apia, which had DST
// in 2010-2021 and skipped 2011-12-30, in those years). Checks that its gap,
// if it is one, begins on the hour, as PassedOver assumes.
absl::TimeZone::CivilTransition RandomTransition(Generator& gen, absl::string_view zone) {
  absl::TimeZone tz;
  EXPECT_TRUE(absl::LoadTimeZone(std::string(zone), &tz));
  absl::Time from = absl::FromUnixSeconds(gen.Uniform(473385600, 1893456000));
  if (zone == "Asia/Shanghai") {
    from = absl::FromUnixSeconds(gen.Uniform(504921600, 670000000));
  } else if (zone == "Pacific/Apia") {
    from =
        absl::FromUnixSeconds(gen.Chance(0.5) ? 1324000000 : gen.Uniform(1280000000, 1600000000));
  }
  absl::TimeZone::CivilTransition trans;
  EXPECT_TRUE(tz.NextTransition(from, &trans));
  if (trans.to > trans.from) {
    EXPECT_EQ(trans.from, absl::CivilSecond(absl::CivilHour(trans.from)))
        << zone << ": a gap that does not begin on the hour";
  }
  return trans;
}

constexpr const char* kDstZones[] = {"America/New_York", "Europe/Berlin", "Australia/Lord_Howe",
                                     "Asia/Shanghai", "Pacific/Apia"};

// Around real offset changes, against the brute force's DST policy.
TEST(CronPropertyTest, MatchesBruteForceAroundOffsetChanges) {
  Generator gen(99);
  for (int i = 0; i < 1000; ++i) {
    const char* zone = kDstZones[gen.Uniform(0, 4)];
    absl::TimeZone tz;
    ASSERT_TRUE(absl::LoadTimeZone(zone, &tz));
    const absl::TimeZone::CivilTransition trans = RandomTransition(gen, zone);
    const absl::Time at = tz.At(trans.to).trans;
    Expr e = gen.RandomExpr(/*daily=*/gen.Chance(0.7));
    CheckChain(e, zone, at + absl::Seconds(gen.Uniform(-2 * 86400, 86400)));
    if (HasFatalFailure()) return;
  }
}

// Searches starting in the hour before a gap, where Quartz may pass over
// existing times after the gap (see PassedOver): in Australia/Lord_Howe with
// its 30-minute gap it must, now and then, and the expressions here fire in
// the hours around the gap so that it matters.
TEST(CronPropertyTest, MatchesBruteForceFromTheHourBeforeAGap) {
  Generator gen(2024);
  int passed_over = 0;
  for (int i = 0; i < 1500; ++i) {
    const char* zone = i % 2 == 0 ? "Australia/Lord_Howe" : kDstZones[gen.Uniform(0, 4)];
    absl::TimeZone tz;
    ASSERT_TRUE(absl::LoadTimeZone(zone, &tz));
    absl::TimeZone::CivilTransition trans = RandomTransition(gen, zone);
    while (trans.to <= trans.from) {  // The next gap.
      ASSERT_TRUE(tz.NextTransition(tz.At(trans.to).trans, &trans));
    }
    ASSERT_EQ(trans.from, absl::CivilSecond(absl::CivilHour(trans.from)));
    const absl::Time at = tz.At(trans.to).trans;
    const Expr e = gen.RandomExpr(/*daily=*/true);
    absl::Time after = at - absl::Seconds(gen.Uniform(1, 3600));
    if (gen.Chance(0.2)) after += absl::Milliseconds(gen.Uniform(1, 999));
    CheckChain(e, zone, after, &passed_over);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(passed_over, 10);
}

}  // namespace
}  // namespace jobwheel::scheduler
