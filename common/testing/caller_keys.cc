#include "common/testing/caller_keys.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/auth/caller_token.h"
#include "common/time/clock.h"

namespace jobwheel::testing {
namespace {

absl::Status WritePrivateFile(const std::string& path, const std::string& content) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
  const bool ok = write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  close(fd);
  if (!ok) return absl::InternalError(absl::StrCat(path, ": short write"));
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> CallerKeyFiles::SchedulerFlags() const {
  return {"--signing_key_file=" + scheduler_key};
}

std::vector<std::string> CallerKeyFiles::DispatcherFlags() const {
  return {"--signing_key_file=" + dispatcher_key, "--scheduler_public_key_file=" + scheduler_pub};
}

std::vector<std::string> CallerKeyFiles::RegistryFlags() const {
  return {"--dispatcher_public_key_file=" + dispatcher_pub};
}

std::vector<std::string> CallerKeyFiles::ExecutorFlags() const {
  return {"--dispatcher_public_key_file=" + dispatcher_pub,
          "--scheduler_public_key_file=" + scheduler_pub};
}

absl::StatusOr<CallerKeyFiles> WriteCallerKeys(const std::string& dir) {
  CallerKeyFiles files;
  for (auto [name, key, pub] :
       {std::make_tuple("scheduler", &files.scheduler_key, &files.scheduler_pub),
        std::make_tuple("dispatcher", &files.dispatcher_key, &files.dispatcher_pub)}) {
    absl::StatusOr<CallerKeyPair> pair = GenerateCallerKeyPair();
    if (!pair.ok()) return pair.status();
    *key = absl::StrCat(dir, "/", name, ".key");
    *pub = absl::StrCat(dir, "/", name, ".pub");
    if (absl::Status s = WritePrivateFile(*key, pair->private_pem); !s.ok()) return s;
    if (absl::Status s = WritePrivateFile(*pub, pair->public_pem); !s.ok()) return s;
  }
  return files;
}

absl::StatusOr<std::string> SignCallerToken(const std::string& private_key_file,
                                            absl::string_view issuer, absl::string_view audience) {
  absl::StatusOr<std::string> pem = ReadKeyFile(private_key_file, "private_key_file");
  if (!pem.ok()) return pem.status();
  CallerTokenSigner::Options options;
  options.issuer = std::string(issuer);
  auto signer = CallerTokenSigner::Create(*pem, options, RealClock::Get());
  if (!signer.ok()) return signer.status();
  return (*signer)->TokenFor(audience);
}

}  // namespace jobwheel::testing
