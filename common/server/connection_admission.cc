#include "common/server/connection_admission.h"

#include "absl/strings/str_cat.h"

namespace jobwheel {

ConnectionAdmission::ConnectionAdmission(int max_connections, int max_per_client)
    : max_connections_(max_connections), max_per_client_(max_per_client) {}

absl::Status ConnectionAdmission::Admit(absl::string_view client) {
  absl::MutexLock lock(&mu_);
  if (open_ >= max_connections_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("all ", max_connections_, " connections are in use"));
  }
  int& mine = per_client_[std::string(client)];
  if (mine >= max_per_client_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this client already has ", max_per_client_, " connections open"));
  }
  ++mine;
  ++open_;
  return absl::OkStatus();
}

void ConnectionAdmission::Release(absl::string_view client) {
  absl::MutexLock lock(&mu_);
  auto it = per_client_.find(client);
  if (it == per_client_.end()) return;
  --open_;
  if (--it->second <= 0) per_client_.erase(it);
}

int ConnectionAdmission::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

int ConnectionAdmission::open(absl::string_view client) const {
  absl::MutexLock lock(&mu_);
  auto it = per_client_.find(client);
  return it == per_client_.end() ? 0 : it->second;
}

}  // namespace jobwheel
