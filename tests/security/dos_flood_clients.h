#ifndef JOBWHEEL_TESTS_SECURITY_DOS_FLOOD_CLIENTS_H_
#define JOBWHEEL_TESTS_SECURITY_DOS_FLOOD_CLIENTS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel::security_testing {

// Unauthenticated clients flooding a scheduler, each on its own connection with one call in
// flight at a time, issued from the previous call's completion (gRPC's callback API, so 200
// clients need no 200 threads):
//  - kGetLeader: LeadershipService/GetLeader without a token;
//  - kJunkToken: JobAdminService/ListJobs with a fresh well-formed `jw_…` secret each call,
//    never a valid one (so no negative cache entry helps the server).
// Start() once, Stop() (idempotent) waits until every chain has ended. Thread-safe counters.
class FloodClients {
 public:
  enum class Kind { kGetLeader, kJunkToken };
  struct Counts {
    int64_t ok = 0;
    int64_t unauthenticated = 0;
    int64_t other = 0;  // e.g. RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED.
  };

  // `get_leader` + `junk_token` clients against `target` (plaintext).
  FloodClients(std::string target, int get_leader, int junk_token);
  ~FloodClients();

  void Start();
  void Stop();
  Counts counts(Kind kind) const;
  int clients() const { return static_cast<int>(clients_.size()); }

 private:
  struct Client;
  void Issue(Client* c);
  void Done(Client* c, const grpc::Status& status);

  const std::string target_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::atomic<bool> stopping_{false};
  mutable absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  Counts leader_ ABSL_GUARDED_BY(mu_);
  Counts junk_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::security_testing

#endif  // JOBWHEEL_TESTS_SECURITY_DOS_FLOOD_CLIENTS_H_
