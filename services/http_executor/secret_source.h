#ifndef JOBWHEEL_SERVICES_HTTP_EXECUTOR_SECRET_SOURCE_H_
#define JOBWHEEL_SERVICES_HTTP_EXECUTOR_SECRET_SOURCE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "services/http_executor/http_job_spec.h"

namespace jobwheel::http_executor {

// Reads the values of an HTTP job's secret headers, only from where the executor's operator
// allowed: files directly inside `dir` (a plain file name, no path; a regular file, not a
// symbolic link, at most 8 KiB; one trailing newline dropped) and environment variables
// whose names start with `env_prefix`. Either source is off while its option is empty. The
// values are never logged. Immutable; thread-safe.
class SecretSource {
 public:
  struct Options {
    std::string dir;         // --secret_dir
    std::string env_prefix;  // --secret_env_prefix
  };
  using GetEnv = std::function<const char*(const char*)>;

  explicit SecretSource(Options options, GetEnv getenv = nullptr);

  // The header value: ref.prefix + the secret. FAILED_PRECONDITION naming the header and the
  // source (never the value) when it may not or cannot be read, or holds CR, LF or NUL.
  absl::StatusOr<std::string> Read(const SecretRef& ref) const;

 private:
  absl::StatusOr<std::string> ReadFile(const SecretRef& ref) const;
  absl::StatusOr<std::string> ReadEnv(const SecretRef& ref) const;

  const Options options_;
  const GetEnv getenv_;
};

}  // namespace jobwheel::http_executor

#endif  // JOBWHEEL_SERVICES_HTTP_EXECUTOR_SECRET_SOURCE_H_
