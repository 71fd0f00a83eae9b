#ifndef JOBWHEEL_COMMON_SERVER_CONNECTION_ADMISSION_H_
#define JOBWHEEL_COMMON_SERVER_CONNECTION_ADMISSION_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace jobwheel {

// Counts open connections, in all and per client (its IP address), and admits a new one only
// under both caps, so one client cannot hold every connection the server serves. Thread-safe.
class ConnectionAdmission {
 public:
  ConnectionAdmission(int max_connections, int max_per_client);

  // OK and counted, or RESOURCE_EXHAUSTED saying which cap is full.
  absl::Status Admit(absl::string_view client);
  // One admitted connection of `client` closed.
  void Release(absl::string_view client);

  int open() const;
  int open(absl::string_view client) const;

 private:
  const int max_connections_;
  const int max_per_client_;
  mutable absl::Mutex mu_;
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, int> per_client_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_SERVER_CONNECTION_ADMISSION_H_
