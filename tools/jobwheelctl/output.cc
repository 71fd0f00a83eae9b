#include "tools/jobwheelctl/output.h"

#include <iostream>

#include "absl/time/time.h"
#include "common/time/proto_time.h"
#include "google/protobuf/util/json_util.h"
#include "tools/jobwheelctl/terminal_text.h"

namespace jobwheel::ctl {
namespace {

std::string Trim(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n - 1) + "~";
  return s;
}

}  // namespace

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = false;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

std::string Time(const google::protobuf::Timestamp& ts) {
  if (ts.seconds() == 0 && ts.nanos() == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%E3S", FromProto(ts), absl::UTCTimeZone());
}

void Row(const std::vector<std::string>& cells, const std::vector<int>& widths) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    // Cells carry job data: never raw control characters to the terminal.
    std::string c = Trim(EscapeForTerminal(cells[i]), widths[i]);
    line += c + std::string(widths[i] - c.size() + 2, ' ');
  }
  std::cout << line << "\n";
}

int PrintJson(const google::protobuf::Message& m) {
  std::cout << ToJson(m) << "\n";
  return 0;
}

}  // namespace jobwheel::ctl
