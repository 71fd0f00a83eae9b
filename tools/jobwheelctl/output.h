#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_OUTPUT_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_OUTPUT_H_

#include <string>
#include <vector>

#include "google/protobuf/message.h"
#include "google/protobuf/timestamp.pb.h"

namespace jobwheel::ctl {

// A message as indented JSON with lowerCamel field names (what `--json` prints).
std::string ToJson(const google::protobuf::Message& m);

// A timestamp as "YYYY-MM-DD HH:MM:SS.mmm" in UTC; "-" when unset.
std::string Time(const google::protobuf::Timestamp& ts);

// Prints one table row: each cell escaped for the terminal, cut to its width with "~", padded
// to the width plus two spaces.
void Row(const std::vector<std::string>& cells, const std::vector<int>& widths);

// Prints `m` as JSON on stdout with a newline; returns 0.
int PrintJson(const google::protobuf::Message& m);

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_OUTPUT_H_
