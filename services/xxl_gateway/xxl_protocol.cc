#include "services/xxl_gateway/xxl_protocol.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/json_escape.h"
#include "common/net/url.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace jobwheel::xxl {
namespace {

constexpr size_t kMaxAppName = 64;

template <typename M>
absl::Status ParseJson(absl::string_view body, M* out, absl::string_view what) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(body.data(), body.size()), out, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not valid JSON of the expected shape: ",
                     std::string(status.message().data(), status.message().size())));
  }
  return absl::OkStatus();
}

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

absl::Status BadUrl(absl::string_view url, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("registryValue \"", JsonEscape(url.substr(0, 200)), "\": ", why));
}

}  // namespace

AdminEndpoint AdminEndpointOf(absl::string_view path) {
  if (absl::EndsWith(path, "/api/registry")) return AdminEndpoint::kRegistry;
  if (absl::EndsWith(path, "/api/registryRemove")) return AdminEndpoint::kRegistryRemove;
  if (absl::EndsWith(path, "/api/callback")) return AdminEndpoint::kCallback;
  return AdminEndpoint::kNone;
}

std::string AdminReply(bool ok, absl::string_view reason) {
  if (ok) return R"({"code":200,"msg":"Success","content":null,"data":null})";
  return absl::StrCat(R"({"code":500,"msg":")", JsonEscape(reason),
                      R"(","content":null,"data":null})");
}

absl::StatusOr<RegistryParam> ParseRegistryParam(absl::string_view body) {
  RegistryParam p;
  if (absl::Status s = ParseJson(body, &p, "registry body"); !s.ok()) return s;
  if (!p.registry_group().empty() && p.registry_group() != "EXECUTOR") {
    return absl::InvalidArgumentError(absl::StrCat("registryGroup \"",
                                                   JsonEscape(p.registry_group().substr(0, 64)),
                                                   "\": only EXECUTOR is supported"));
  }
  if (absl::Status s = ValidateAppName(p.registry_key()); !s.ok()) return s;
  if (p.registry_value().empty()) {
    return absl::InvalidArgumentError("registryValue: must not be empty");
  }
  return p;
}

absl::StatusOr<std::vector<HandleCallbackParam>> ParseCallbacks(absl::string_view body) {
  CallbackBatch batch;
  const absl::string_view trimmed = absl::StripAsciiWhitespace(body);
  if (absl::StartsWith(trimmed, "[")) {
    // A top-level array: parsed as the one field of a wrapper message. The body is a
    // complete JSON value or the parse fails, so nothing else can be smuggled in.
    google::protobuf::ListValue list;
    if (absl::Status s = ParseJson(trimmed, &list, "callback body"); !s.ok()) return s;
    const std::string wrapped = absl::StrCat(R"({"callbackList":)", trimmed, "}");
    if (absl::Status s = ParseJson(wrapped, &batch, "callback body"); !s.ok()) return s;
  } else {
    if (absl::Status s = ParseJson(trimmed, &batch, "callback body"); !s.ok()) return s;
  }
  std::vector<HandleCallbackParam> out(batch.callback_list().begin(), batch.callback_list().end());
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].log_id() <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("callback[", i, "].logId: must be positive"));
    }
  }
  return out;
}

absl::StatusOr<XxlReply> ParseReply(absl::string_view body) {
  StringEnvelope env;
  XxlReply reply;
  if (ParseJson(body, &env, "reply").ok()) {
    reply.code = env.code();
    reply.msg = !env.msg().empty() ? env.msg() : !env.data().empty() ? env.data() : env.content();
    return reply;
  }
  // content/data of another type: only the code and msg matter.
  google::protobuf::Struct any;
  if (absl::Status s = ParseJson(body, &any, "reply"); !s.ok()) return s;
  auto code = any.fields().find("code");
  if (code == any.fields().end() || !code->second.has_number_value()) {
    return absl::InvalidArgumentError("reply: no numeric code");
  }
  reply.code = static_cast<int>(code->second.number_value());
  auto msg = any.fields().find("msg");
  if (msg != any.fields().end() && msg->second.has_string_value()) {
    reply.msg = msg->second.string_value();
  }
  return reply;
}

absl::StatusOr<LogResult> ParseLogReply(absl::string_view body) {
  LogEnvelope env;
  if (absl::Status s = ParseJson(body, &env, "log reply"); !s.ok()) return s;
  if (env.code() != 200) {
    return absl::UnavailableError(
        absl::StrCat("XXL executor /log answered code ", env.code(), ": ", env.msg()));
  }
  return env.has_data() ? env.data() : env.content();
}

std::string TriggerJson(const Trigger& t) {
  return absl::StrCat(R"({"jobId":)", t.job_id, R"(,"executorHandler":")", JsonEscape(t.handler),
                      R"(","executorParams":")", JsonEscape(t.params),
                      R"(","executorBlockStrategy":")", JsonEscape(t.block_strategy),
                      R"(","executorTimeout":)", t.timeout_s, R"(,"logId":)", t.log_id,
                      R"(,"logDateTime":)", t.log_date_time_ms, R"(,"glueType":")",
                      JsonEscape(t.glue_type), R"(","glueSource":")", JsonEscape(t.glue_source),
                      R"(","glueUpdatetime":)", t.glue_updatetime, R"(,"broadcastIndex":)",
                      t.broadcast_index, R"(,"broadcastTotal":)", t.broadcast_total, "}");
}

std::string IdleBeatJson(int32_t job_id) { return absl::StrCat(R"({"jobId":)", job_id, "}"); }

std::string KillJson(int32_t job_id) { return absl::StrCat(R"({"jobId":)", job_id, "}"); }

std::string LogJson(int64_t log_id, int64_t log_date_time_ms, int from_line) {
  // Both spellings: "logDateTim" (≤ 3.4) and "logDateTime" (3.5).
  return absl::StrCat(R"({"logDateTim":)", log_date_time_ms, R"(,"logDateTime":)", log_date_time_ms,
                      R"(,"logId":)", log_id, R"(,"fromLineNum":)", from_line, "}");
}

absl::StatusOr<ExecutorUrl> ParseExecutorUrl(absl::string_view url) {
  if (url.size() > 512) return BadUrl(url, "longer than 512 characters");
  absl::StatusOr<net::Url> parsed = net::ParseHttpUrl(url);
  if (!parsed.ok()) return BadUrl(url, parsed.status().message());
  absl::string_view path = parsed->path;
  if (absl::StrContains(path, '?')) return BadUrl(url, "no query allowed");
  while (absl::ConsumeSuffix(&path, "/")) {
  }
  if (absl::StrContains(path, "//") || absl::StrContains(path, "/../") ||
      absl::EndsWith(path, "/..")) {
    return BadUrl(url, "bad path");
  }
  ExecutorUrl out;
  out.scheme = parsed->scheme;
  out.host = parsed->host;
  out.port = parsed->port;
  out.path = std::string(path);
  out.base = absl::StrCat(parsed->Origin(), out.path);
  return out;
}

absl::Status ValidateAppName(absl::string_view app) {
  if (app.empty()) return absl::InvalidArgumentError("registryKey: must not be empty");
  if (app.size() > kMaxAppName) {
    return absl::InvalidArgumentError("registryKey: longer than 64 characters");
  }
  for (char c : app) {
    if (!IsNameChar(c)) {
      return absl::InvalidArgumentError("registryKey: may contain only A-Z a-z 0-9 _ . -");
    }
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::xxl
