#include "services/xxl_gateway/state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "openssl/sha.h"
#include "spdlog/spdlog.h"

namespace jobwheel::xxl {
namespace {

absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::InvalidArgumentError(
        absl::StrCat("--state_dir: cannot create ", path, ": ", std::strerror(errno)));
  }
  chmod(path.c_str(), 0700);
  return absl::OkStatus();
}

std::vector<std::string> ListFiles(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (absl::EndsWith(name, ".pb")) out.push_back(dir + "/" + name);
  }
  closedir(d);
  return out;
}

bool ReadAll(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buf;
  buf << in.rdbuf();
  *out = buf.str();
  return true;
}

}  // namespace

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  std::string hex;
  for (unsigned char b : digest) absl::StrAppendFormat(&hex, "%02x", b);
  return hex;
}

std::string IdentityKey(absl::string_view app, absl::string_view url_base) {
  return absl::StrCat(app, " ", url_base);
}

absl::Status StateDir::Open() {
  if (dir_.empty()) return absl::OkStatus();
  // Parents first (0700 too), like mkdir -p.
  for (size_t slash = dir_.find('/', 1); slash != std::string::npos;
       slash = dir_.find('/', slash + 1)) {
    const std::string parent = dir_.substr(0, slash);
    struct stat st;
    if (stat(parent.c_str(), &st) == 0) continue;
    if (mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::InvalidArgumentError(
          absl::StrCat("--state_dir: cannot create ", parent, ": ", std::strerror(errno)));
    }
  }
  if (absl::Status s = MakeDir(dir_); !s.ok()) return s;
  return MakeDir(dir_ + "/identities");
}

absl::Status StateDir::WriteWhole(const std::string& path, const std::string& bytes) const {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("state: cannot write ", tmp, ": ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return absl::InternalError(absl::StrCat("state: write ", tmp, ": ", std::strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    return absl::InternalError(absl::StrCat("state: sync ", tmp, ": ", std::strerror(errno)));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("state: rename ", tmp, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status StateDir::SaveIdentity(const IdentityRecord& record) {
  if (dir_.empty()) return absl::OkStatus();
  const std::string path =
      absl::StrCat(dir_, "/identities/", Sha256Hex(IdentityKey(record.app(), record.url())), ".pb");
  return WriteWhole(path, record.SerializeAsString());
}

absl::StatusOr<std::vector<IdentityRecord>> StateDir::LoadIdentities() const {
  std::vector<IdentityRecord> out;
  if (dir_.empty()) return out;
  for (const std::string& path : ListFiles(dir_ + "/identities")) {
    std::string bytes;
    IdentityRecord r;
    if (!ReadAll(path, &bytes) || !r.ParseFromString(bytes)) {
      spdlog::warn("state: skipping unreadable identity record {}", path);
      continue;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace jobwheel::xxl
