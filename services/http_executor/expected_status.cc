#include "services/http_executor/expected_status.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace jobwheel::http_executor {
namespace {

bool ParseCode(absl::string_view text, int* code) {
  if (text.size() != 3) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  return absl::SimpleAtoi(text, code) && *code >= 100 && *code <= 599;
}

}  // namespace

absl::StatusOr<std::pair<int, int>> ExpectedStatus::ParseEntry(absl::string_view text) {
  const std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  int lo = 0, hi = 0;
  if (t.size() == 3 && t[1] == 'x' && t[2] == 'x' && t[0] >= '1' && t[0] <= '5') {
    lo = (t[0] - '0') * 100;
    return std::make_pair(lo, lo + 99);
  }
  const size_t dash = t.find('-');
  if (dash == std::string::npos) {
    if (ParseCode(t, &lo)) return std::make_pair(lo, lo);
  } else if (ParseCode(t.substr(0, dash), &lo) && ParseCode(t.substr(dash + 1), &hi) && lo <= hi) {
    return std::make_pair(lo, hi);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "\"", text, "\" is not a status code (100..599), a class such as 2xx or a range lo-hi"));
}

absl::StatusOr<ExpectedStatus> ExpectedStatus::FromEntries(
    const std::vector<std::string>& entries) {
  ExpectedStatus out;
  if (entries.empty()) return out;
  out.ranges_.clear();
  for (const std::string& e : entries) {
    absl::StatusOr<std::pair<int, int>> r = ParseEntry(e);
    if (!r.ok()) return r.status();
    out.ranges_.push_back(*r);
  }
  return out;
}

bool ExpectedStatus::Matches(int status) const {
  for (const auto& [lo, hi] : ranges_) {
    if (status >= lo && status <= hi) return true;
  }
  return false;
}

std::string ExpectedStatus::ToString() const {
  return absl::StrJoin(ranges_, ",", [](std::string* out, const std::pair<int, int>& r) {
    if (r.first == r.second) {
      absl::StrAppend(out, r.first);
    } else if (r.first % 100 == 0 && r.second == r.first + 99) {
      absl::StrAppend(out, r.first / 100, "xx");
    } else {
      absl::StrAppend(out, r.first, "-", r.second);
    }
  });
}

}  // namespace jobwheel::http_executor
