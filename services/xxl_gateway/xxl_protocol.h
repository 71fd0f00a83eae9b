#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_XXL_PROTOCOL_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_XXL_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jobwheel/xxl/xxl_wire.pb.h"

// XXL-JOB's executor protocol (docs/xxl-job.md): parsing the bodies XXL executors send to the
// admin side and the answers they give the admin, and writing what the admin sends them.
// Bodies are parsed with protobuf's JSON utilities (unknown fields ignored); nothing here
// does I/O.
namespace jobwheel::xxl {

// Which admin endpoint a request path names: the suffix decides, so "/xxl-job-admin/api/..."
// (2.4.x, with a context path) and "/api/..." (3.4.1+) are the same.
enum class AdminEndpoint { kNone, kRegistry, kRegistryRemove, kCallback };
AdminEndpoint AdminEndpointOf(absl::string_view path);

// The admin's answer, in the envelope every version accepts:
// {"code":200,"msg":"Success","content":null,"data":null}, or code 500 with `reason`.
std::string AdminReply(bool ok, absl::string_view reason = "");

absl::StatusOr<RegistryParam> ParseRegistryParam(absl::string_view body);
// A JSON array of HandleCallbackParam (≤ 3.4) or {"callbackList": [...]} (3.5).
absl::StatusOr<std::vector<HandleCallbackParam>> ParseCallbacks(absl::string_view body);

// The answer of /beat, /idleBeat, /run or /kill: its code and its message (msg, else the
// `data` or `content` string).
struct XxlReply {
  int code = 0;
  std::string msg;
};
absl::StatusOr<XxlReply> ParseReply(absl::string_view body);
// The answer of /log: LogResult from `content` (≤ 3.2) or `data` (≥ 3.3).
absl::StatusOr<LogResult> ParseLogReply(absl::string_view body);

// What /run takes (TriggerParam).
struct Trigger {
  int32_t job_id = 0;
  std::string handler;
  std::string params;
  std::string block_strategy;  // SERIAL_EXECUTION, DISCARD_LATER or COVER_EARLY.
  int32_t timeout_s = 0;       // 0: none.
  int64_t log_id = 0;
  int64_t log_date_time_ms = 0;
  std::string glue_type;  // BEAN, GLUE_SHELL, GLUE_PYTHON.
  std::string glue_source;
  int64_t glue_updatetime = 0;
  int32_t broadcast_index = 0;
  int32_t broadcast_total = 1;
};
std::string TriggerJson(const Trigger& t);
std::string IdleBeatJson(int32_t job_id);
std::string KillJson(int32_t job_id);
std::string LogJson(int64_t log_id, int64_t log_date_time_ms, int from_line);

// A registryValue such as "http://10.0.0.7:9999/": http(s), a host (name, IPv4 or [IPv6]), an
// optional port, an optional path. `base` is the URL without a trailing '/', to which "/run"
// etc. are appended.
struct ExecutorUrl {
  std::string scheme;  // "http" or "https".
  std::string host;    // Without brackets.
  int port = 0;
  std::string path;  // "" or "/ctx" (no trailing '/').
  std::string base;  // scheme://host:port + path.
};
// INVALID_ARGUMENT naming registryValue for anything else (userinfo, query, fragment, spaces,
// control characters, a bad port).
absl::StatusOr<ExecutorUrl> ParseExecutorUrl(absl::string_view url);

// registryKey: 1..64 of A-Z a-z 0-9 _ . - (the registry's app names).
absl::Status ValidateAppName(absl::string_view app);

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_XXL_PROTOCOL_H_
