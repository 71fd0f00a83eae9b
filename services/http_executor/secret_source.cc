#include "services/http_executor/secret_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace jobwheel::http_executor {
namespace {

constexpr size_t kMaxSecret = 8192;

absl::Status Refused(const SecretRef& ref, absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(
      "secret header ", ref.header, " (", ref.source == SecretRef::Source::kFile ? "file" : "env",
      " \"", ref.name, "\"): ", why));
}

bool IsPlainFileName(absl::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.size() > 255) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

SecretSource::SecretSource(Options options, GetEnv getenv)
    : options_(std::move(options)),
      getenv_(getenv ? std::move(getenv) : GetEnv([](const char* n) { return std::getenv(n); })) {}

absl::StatusOr<std::string> SecretSource::Read(const SecretRef& ref) const {
  absl::StatusOr<std::string> secret =
      ref.source == SecretRef::Source::kFile ? ReadFile(ref) : ReadEnv(ref);
  if (!secret.ok()) return secret.status();
  if (!IsHeaderValue(*secret)) return Refused(ref, "the secret holds CR, LF or NUL");
  return absl::StrCat(ref.prefix, *secret);
}

absl::StatusOr<std::string> SecretSource::ReadFile(const SecretRef& ref) const {
  if (options_.dir.empty()) {
    return Refused(ref, "this executor reads no secret files (--secret_dir is not set)");
  }
  if (!IsPlainFileName(ref.name)) {
    return Refused(ref, "must be a plain file name in --secret_dir (letters, digits, . _ -)");
  }
  const std::string path = absl::StrCat(options_.dir, "/", ref.name);
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Refused(ref, "cannot be opened in --secret_dir (missing or a symlink)");
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > static_cast<off_t>(kMaxSecret)) {
    close(fd);
    return Refused(ref, "not a regular file of at most 8 KiB");
  }
  std::string value(static_cast<size_t>(st.st_size), '\0');
  const ssize_t n = read(fd, value.data(), value.size());
  close(fd);
  if (n < 0) return Refused(ref, "cannot be read");
  value.resize(static_cast<size_t>(n));
  if (absl::EndsWith(value, "\r\n")) {
    value.resize(value.size() - 2);
  } else if (absl::EndsWith(value, "\n")) {
    value.pop_back();
  }
  return value;
}

absl::StatusOr<std::string> SecretSource::ReadEnv(const SecretRef& ref) const {
  if (options_.env_prefix.empty()) {
    return Refused(ref, "this executor reads no secret variables (--secret_env_prefix is not set)");
  }
  if (!absl::StartsWith(ref.name, options_.env_prefix) ||
      ref.name.size() == options_.env_prefix.size()) {
    return Refused(ref, absl::StrCat("the variable must start with --secret_env_prefix (",
                                     options_.env_prefix, ")"));
  }
  const char* value = getenv_(ref.name.c_str());
  if (value == nullptr) return Refused(ref, "the variable is not set on this executor");
  if (std::string(value).size() > kMaxSecret) return Refused(ref, "longer than 8 KiB");
  return std::string(value);
}

}  // namespace jobwheel::http_executor
