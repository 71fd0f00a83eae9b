#include "services/dispatcher/late_result.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"
#include "services/dispatcher/result_message.h"

namespace jobwheel::dispatcher {
namespace {

constexpr size_t kAddressBytes = 256;

std::string Cut(absl::string_view s, size_t max_bytes) {
  std::string cut(s);
  TruncateResultMessage(&cut, max_bytes);
  return cut;
}

}  // namespace

std::string LateResultText(const v1::RunResult& result, absl::Time received) {
  const bool has_end =
      result.has_end_time() && (result.end_time().seconds() != 0 || result.end_time().nanos() != 0);
  const absl::Time at = has_end ? FromProto(result.end_time()) : received;
  const std::string address = result.executor_address().empty()
                                  ? "an unnamed executor"
                                  : Cut(result.executor_address(), kAddressBytes);
  return absl::StrCat(RunStatusShortName(result.status()), " code ", result.code(), " at ",
                      absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", at, absl::UTCTimeZone()), " from ",
                      address, ": ", Cut(result.message(), kLateResultMessageBytes));
}

}  // namespace jobwheel::dispatcher
