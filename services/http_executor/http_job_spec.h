#ifndef JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_JOB_SPEC_H_
#define JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_JOB_SPEC_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/net/url.h"
#include "services/http_executor/expected_status.h"

namespace jobwheel::http_executor {

// Where a secret header's value comes from.
struct SecretRef {
  std::string header;  // Header name.
  enum class Source { kFile, kEnv } source = Source::kFile;
  std::string name;    // File name in --secret_dir, or environment variable name.
  std::string prefix;  // Put before the value ("Bearer ").
};

// An HTTP job's param, parsed and validated (see http_job_spec.proto, docs/http-jobs.md).
// A value type.
struct HttpJobSpec {
  std::string method = "GET";
  net::Url url;
  std::vector<std::pair<std::string, std::string>> headers;  // Sorted by name.
  std::string body;
  ExpectedStatus expected_status;
  absl::Duration timeout = absl::Seconds(30);
  bool follow_redirects = false;
  int max_redirects = 0;  // Meaningful when follow_redirects.
  std::vector<SecretRef> secret_headers;
};

inline constexpr absl::Duration kDefaultTimeout = absl::Seconds(30);
inline constexpr absl::Duration kMaxTimeout = absl::Hours(1);
inline constexpr int kDefaultMaxRedirects = 5;
inline constexpr int kMaxRedirects = 10;
inline constexpr int kMaxHeaders = 64;
inline constexpr size_t kMaxBodyBytes = 256 * 1024;

// Parses the JSON param. INVALID_ARGUMENT naming the field ("param.url: ...",
// "param.headers[\"X-A\"]: ...") for bad JSON, unknown fields, a method outside GET, HEAD,
// POST, PUT, PATCH, DELETE, OPTIONS, a bad URL (common/net/url.h), header names that are not
// HTTP tokens, values with CR, LF or NUL, a header given twice (names are case-insensitive),
// Host, Content-Length, Transfer-Encoding or Connection headers (the executor sets them), a
// body over 256 KiB, bad expected statuses, a timeout outside (0, 1h], max_redirects outside
// 0..10 and secret headers without a name or source.
absl::StatusOr<HttpJobSpec> ParseHttpJobSpec(absl::string_view param);

// Whether `name` is an HTTP header name token (RFC 9110).
bool IsHeaderName(absl::string_view name);
// Whether `value` may be sent as a header value (no CR, LF or NUL).
bool IsHeaderValue(absl::string_view value);

}  // namespace jobwheel::http_executor

#endif  // JOBWHEEL_SERVICES_HTTP_EXECUTOR_HTTP_JOB_SPEC_H_
