#include "services/http_executor/http_job_spec.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "http_job_spec.pb.h"

namespace jobwheel::http_executor {
namespace {

constexpr absl::string_view kMethods[] = {"GET",   "HEAD",   "POST",   "PUT",
                                          "PATCH", "DELETE", "OPTIONS"};
// Set by the executor (framing and routing): a job may not override them.
constexpr absl::string_view kReservedHeaders[] = {
    "host", "content-length", "transfer-encoding", "connection",      "expect", "upgrade",
    "te",   "trailer",        "keep-alive",        "proxy-connection"};
constexpr size_t kMaxHeaderValue = 8192;

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("param.", field, ": ", why));
}

absl::StatusOr<std::string> StatusEntry(const google::protobuf::Value& v, int index) {
  const std::string field = absl::StrCat("expected_status[", index, "]");
  if (v.kind_case() == google::protobuf::Value::kStringValue) return v.string_value();
  if (v.kind_case() == google::protobuf::Value::kNumberValue) {
    const double n = v.number_value();
    if (n == std::floor(n) && n >= 100 && n <= 599) return absl::StrCat(static_cast<int>(n));
  }
  return Invalid(field, "want a status code (100..599), \"2xx\" or \"200-299\"");
}

absl::Status CheckHeader(absl::string_view field, absl::string_view name, absl::string_view value,
                         absl::flat_hash_set<std::string>& seen) {
  if (!IsHeaderName(name)) return Invalid(field, "not an HTTP header name");
  const std::string lower = absl::AsciiStrToLower(name);
  for (absl::string_view r : kReservedHeaders) {
    if (lower == r) return Invalid(field, "set by the executor; a job cannot set it");
  }
  if (absl::StartsWith(lower, "x-jobwheel-")) {
    return Invalid(field, "X-Jobwheel-* headers are the executor's (job, fire, run, schedule)");
  }
  if (!seen.insert(lower).second) return Invalid(field, "given twice (names are case-insensitive)");
  if (value.size() > kMaxHeaderValue) return Invalid(field, "value longer than 8192 bytes");
  if (!IsHeaderValue(value)) return Invalid(field, "value must not contain CR, LF or NUL");
  return absl::OkStatus();
}

absl::Status FillSecrets(const spec::HttpJobSpec& proto, absl::flat_hash_set<std::string>& seen,
                         std::vector<SecretRef>& out) {
  for (int i = 0; i < proto.secret_headers_size(); ++i) {
    const auto& s = proto.secret_headers(i);
    const std::string field = absl::StrCat("secret_headers[", i, "]");
    absl::Status header = CheckHeader(absl::StrCat(field, ".name"), s.name(), s.prefix(), seen);
    if (!header.ok()) return header;
    SecretRef ref;
    ref.header = s.name();
    ref.prefix = s.prefix();
    switch (s.source_case()) {
      case spec::SecretHeader::kFile:
        ref.source = SecretRef::Source::kFile;
        ref.name = s.file();
        break;
      case spec::SecretHeader::kEnv:
        ref.source = SecretRef::Source::kEnv;
        ref.name = s.env();
        break;
      default:
        return Invalid(field, "needs \"file\" or \"env\"");
    }
    if (ref.name.empty()) return Invalid(field, "the file or env name must not be empty");
    out.push_back(std::move(ref));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsHeaderName(absl::string_view name) {
  if (name.empty() || name.size() > 256) return false;
  for (char c : name) {
    if (absl::ascii_isalnum(c)) continue;
    if (std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
  }
  return true;
}

bool IsHeaderValue(absl::string_view value) {
  return std::none_of(value.begin(), value.end(),
                      [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

absl::StatusOr<HttpJobSpec> ParseHttpJobSpec(absl::string_view param) {
  spec::HttpJobSpec proto;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed =
      google::protobuf::util::JsonStringToMessage(std::string(param), &proto, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("param: not an HTTP job spec (JSON, see docs/http-jobs.md): ",
                     parsed.message().ToString()));
  }
  HttpJobSpec spec;
  if (!proto.method().empty()) {
    spec.method = absl::AsciiStrToUpper(proto.method());
    if (std::find(std::begin(kMethods), std::end(kMethods), spec.method) == std::end(kMethods)) {
      return Invalid("method", absl::StrCat("\"", proto.method(),
                                            "\" is not GET, HEAD, POST, PUT, PATCH, DELETE or "
                                            "OPTIONS"));
    }
  }
  if (proto.url().empty()) return Invalid("url", "must not be empty");
  absl::StatusOr<net::Url> url = net::ParseHttpUrl(proto.url());
  if (!url.ok()) return Invalid("url", url.status().message());
  spec.url = *std::move(url);
  if (proto.headers_size() > kMaxHeaders) return Invalid("headers", "more than 64 headers");
  absl::flat_hash_set<std::string> seen;
  for (const auto& [name, value] : proto.headers()) {
    absl::Status h = CheckHeader(absl::StrCat("headers[\"", name, "\"]"), name, value, seen);
    if (!h.ok()) return h;
    spec.headers.emplace_back(name, value);
  }
  std::sort(spec.headers.begin(), spec.headers.end());
  if (proto.body().size() > kMaxBodyBytes) return Invalid("body", "longer than 256 KiB");
  spec.body = proto.body();
  std::vector<std::string> statuses;
  for (int i = 0; i < proto.expected_status_size(); ++i) {
    absl::StatusOr<std::string> entry = StatusEntry(proto.expected_status(i), i);
    if (!entry.ok()) return entry.status();
    statuses.push_back(*entry);
  }
  absl::StatusOr<ExpectedStatus> expected = ExpectedStatus::FromEntries(statuses);
  if (!expected.ok()) return Invalid("expected_status", expected.status().message());
  spec.expected_status = *expected;
  if (proto.has_timeout()) {
    const int64_t ms = google::protobuf::util::TimeUtil::DurationToMilliseconds(proto.timeout());
    spec.timeout = absl::Milliseconds(ms);
    if (spec.timeout <= absl::ZeroDuration() || spec.timeout > kMaxTimeout) {
      return Invalid("timeout", "must be more than 0 and at most 3600s");
    }
  }
  spec.follow_redirects = proto.follow_redirects();
  if (proto.max_redirects() < 0 || proto.max_redirects() > kMaxRedirects) {
    return Invalid("max_redirects", "must be 0..10");
  }
  spec.max_redirects = proto.max_redirects() > 0 ? proto.max_redirects() : kDefaultMaxRedirects;
  absl::Status secrets = FillSecrets(proto, seen, spec.secret_headers);
  if (!secrets.ok()) return secrets;
  return spec;
}

}  // namespace jobwheel::http_executor
