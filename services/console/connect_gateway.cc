#include "services/console/connect_gateway.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/auth/token_authenticator.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/json_util.h"
#include "services/console/connect_error.h"

namespace jobwheel::console {
namespace {

constexpr char kJsonType[] = "application/json";
constexpr char kProtoType[] = "application/proto";

ConnectResponse Error(absl::Status status, int http_status = 0) {
  ConnectResponse r;
  r.http_status = http_status != 0 ? http_status : ConnectHttpStatus(status.code());
  r.content_type = kJsonType;
  r.body = ConnectErrorJson(status);
  r.status = std::move(status);
  return r;
}

// HTTP header values gRPC accepts as ASCII metadata: printable ASCII and space.
bool IsPrintableAscii(absl::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// A fresh message of the generated type `type` (nullptr if it is not generated, which a
// routed method's types always are).
std::unique_ptr<google::protobuf::Message> NewMessage(const google::protobuf::Descriptor* type) {
  const google::protobuf::Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(type);
  if (prototype == nullptr) return nullptr;
  return std::unique_ptr<google::protobuf::Message>(prototype->New());
}

// The JSON parser's complaint without any of the body: a syntax error goes on, after its first
// line, with the text around the error, and a value of the wrong type is quoted back; either
// may be a secret (a param) and the message is logged. The field's name is kept.
std::string JsonErrorWithoutBody(absl::string_view message) {
  absl::string_view line = message.substr(0, message.find('\n'));
  for (absl::string_view marker : {"invalid value", "Invalid value"}) {
    const size_t at = line.find(marker);
    if (at == absl::string_view::npos) continue;
    absl::string_view field = absl::StripAsciiWhitespace(line.substr(0, at));
    field = absl::StripSuffix(field, ":");
    return absl::StrCat(field.empty() ? "a field" : field,
                        ": a value of the wrong type or out of range");
  }
  return std::string(line.substr(0, 200));
}

}  // namespace

ConnectGateway::ConnectGateway(const RouteTable& routes, BackendCaller& backend, const Clock& clock,
                               Options options)
    : routes_(routes),
      backend_(backend),
      clock_(clock),
      options_(options),
      limiter_(options.failed_auth, clock),
      known_tokens_(options.max_known_tokens) {}

bool ConnectGateway::Known(const std::string& hash) const {
  absl::MutexLock lock(&mu_);
  return known_tokens_.Find(hash) != nullptr;
}

void ConnectGateway::SetKnown(const std::string& hash, bool known) const {
  absl::MutexLock lock(&mu_);
  if (known) {
    known_tokens_.Put(hash, true);
  } else {
    known_tokens_.Erase(hash);
  }
}

absl::StatusOr<ConnectGateway::Codec> ConnectGateway::ParseContentType(
    absl::string_view content_type) {
  std::vector<absl::string_view> parts = absl::StrSplit(content_type, ';');
  const std::string media(absl::AsciiStrToLower(absl::StripAsciiWhitespace(parts[0])));
  for (size_t i = 1; i < parts.size(); ++i) {
    absl::string_view param = absl::StripAsciiWhitespace(parts[i]);
    if (param.empty()) continue;
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(param, '=');
    if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(kv.first), "charset")) continue;
    absl::string_view charset = absl::StripAsciiWhitespace(kv.second);
    charset = absl::StripPrefix(absl::StripSuffix(charset, "\""), "\"");
    if (!absl::EqualsIgnoreCase(charset, "utf-8")) {
      return absl::UnimplementedError(
          absl::StrCat("charset ", charset, " is not supported; use utf-8"));
    }
  }
  if (media == kJsonType) return Codec::kJson;
  if (media == kProtoType) return Codec::kProto;
  return absl::UnimplementedError(
      absl::StrCat("content type ", media.empty() ? "(none)" : media,
                   " is not supported; use application/json or application/proto"));
}

absl::StatusOr<absl::Time> ConnectGateway::Deadline(absl::string_view timeout_ms) const {
  absl::Duration timeout = options_.request_timeout;
  if (!timeout_ms.empty()) {
    int64_t ms = 0;
    // The protocol: a positive integer of at most 10 digits.
    if (timeout_ms.size() > 10 || !absl::SimpleAtoi(timeout_ms, &ms) || ms <= 0 ||
        !absl::ascii_isdigit(timeout_ms[0])) {
      return absl::InvalidArgumentError(absl::StrCat("connect-timeout-ms: \"", timeout_ms,
                                                     "\" is not a positive integer of at most 10 "
                                                     "digits"));
    }
    timeout = std::min(timeout, absl::Milliseconds(ms));
  }
  return clock_.Now() + timeout;
}

ConnectResponse ConnectGateway::Handle(const ConnectRequest& request) const {
  absl::StatusOr<RpcRoute> route = routes_.Find(request.path);
  if (!route.ok()) {
    // An unknown procedure is a missing HTTP resource (404, which Connect clients read as
    // unimplemented); disallowed ones look the same.
    ConnectResponse r = Error(route.status(), 404);
    r.service = "unknown";
    r.method = "unknown";
    return r;
  }
  const google::protobuf::MethodDescriptor& method = *route->method;
  auto named = [&method](ConnectResponse r) {
    r.service = method.service()->name();
    r.method = method.name();
    return r;
  };

  absl::StatusOr<Codec> codec = ParseContentType(request.content_type);
  if (!codec.ok()) return named(Error(codec.status(), 415));
  const std::string encoding =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(request.content_encoding));
  if (!encoding.empty() && encoding != "identity") {
    return named(Error(
        absl::UnimplementedError("content-encoding is not supported; send the body uncompressed "
                                 "(identity)"),
        415));
  }
  if (!request.protocol_version.empty() && request.protocol_version != "1") {
    return named(Error(absl::InvalidArgumentError(absl::StrCat(
        "connect-protocol-version: \"", request.protocol_version, "\" is not supported; use 1"))));
  }
  if (request.body.size() > options_.max_body_bytes) {
    return named(Error(absl::ResourceExhaustedError(
                           absl::StrCat("request body of ", request.body.size(),
                                        " bytes is over the limit of ", options_.max_body_bytes)),
                       413));
  }
  if (!IsPrintableAscii(request.authorization)) {
    return named(Error(absl::UnauthenticatedError(
        "Authorization header: must be printable ASCII (\"Bearer <token>\")")));
  }
  absl::StatusOr<absl::Time> deadline = Deadline(request.timeout_ms);
  if (!deadline.ok()) return named(Error(deadline.status()));

  std::unique_ptr<google::protobuf::Message> in = NewMessage(method.input_type());
  std::unique_ptr<google::protobuf::Message> out = NewMessage(method.output_type());
  if (in == nullptr || out == nullptr) {
    return named(Error(absl::InternalError(
        absl::StrCat(method.full_name(), ": message types are not in the generated pool"))));
  }

  // Decode here, not in the backend: a bad field is named in the caller's vocabulary (JSON),
  // and the backend only ever sees well-formed messages.
  std::string wire;
  if (*codec == Codec::kJson) {
    google::protobuf::util::JsonParseOptions parse;
    parse.ignore_unknown_fields = false;
    absl::string_view json = request.body.empty() ? absl::string_view("{}") : request.body;
    auto parsed = google::protobuf::util::JsonStringToMessage(
        google::protobuf::StringPiece(json.data(), json.size()), in.get(), parse);
    if (!parsed.ok()) {
      return named(Error(absl::InvalidArgumentError(
          absl::StrCat("request body is not a valid ", method.input_type()->full_name(),
                       " in JSON: ", JsonErrorWithoutBody(std::string(parsed.message()))))));
    }
    if (!in->SerializeToString(&wire)) {
      return named(Error(absl::InternalError("request could not be serialized")));
    }
  } else {
    if (!in->ParseFromString(request.body)) {
      return named(Error(absl::InvalidArgumentError(
          absl::StrCat("request body is not a valid binary ", method.input_type()->full_name()))));
    }
    wire = request.body;
  }

  // Over its failure budget, a client gets through only with a token a backend accepted lately.
  const std::string token_hash = HashTokenSecret(request.authorization);
  const bool known = !request.authorization.empty() && Known(token_hash);
  if (!known && !limiter_.Allowed(request.client)) {
    return named(Error(absl::ResourceExhaustedError(
        absl::StrCat("too many failed authentications from ", request.client,
                     "; retry later with a valid token"))));
  }
  absl::StatusOr<std::string> answer = backend_.Call(
      route->backend, route->grpc_path, wire, request.authorization, request.client, *deadline);
  if (absl::IsUnauthenticated(answer.status())) {
    limiter_.RecordFailure(request.client);
    if (known) SetKnown(token_hash, false);
  } else if (answer.ok() && !request.authorization.empty() &&
             method.service()->full_name() != "jobwheel.v1.LeadershipService") {
    // LeadershipService answers without a token: its answers say nothing about one.
    SetKnown(token_hash, true);
  }
  if (!answer.ok()) return named(Error(answer.status()));

  ConnectResponse r;
  r.status = absl::OkStatus();
  if (*codec == Codec::kProto) {
    r.content_type = kProtoType;
    r.body = *std::move(answer);
    return named(std::move(r));
  }
  if (!out->ParseFromString(*answer)) {
    return named(Error(absl::InternalError(
        absl::StrCat(BackendName(route->backend), " answered ", method.full_name(),
                     " with bytes that are not a ", method.output_type()->full_name()))));
  }
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = false;  // lowerCamel, as protojson and Connect clients.
  auto printed = google::protobuf::util::MessageToJsonString(*out, &r.body, print);
  if (!printed.ok()) {
    return named(Error(absl::InternalError(
        absl::StrCat("response could not be written as JSON: ", std::string(printed.message())))));
  }
  r.content_type = kJsonType;
  return named(std::move(r));
}

}  // namespace jobwheel::console
