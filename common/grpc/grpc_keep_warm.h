#ifndef JOBWHEEL_COMMON_GRPC_GRPC_KEEP_WARM_H_
#define JOBWHEEL_COMMON_GRPC_GRPC_KEEP_WARM_H_

#include <cstdint>
#include <memory>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel {

// Keeps gRPC's callback-API threads awake in a process that sees few RPCs.
//
// gRPC 1.51 (Debian bookworm) runs every callback-API completion — a request arriving at a
// CallbackService, a client callback call finishing — on "nexting" threads that poll their
// completion queue with a 1 s deadline and, when a second passes without an event, sleep
// 100 ms before polling again. A process that gets about one RPC a second (an executor
// whose jobs fire every second; a dispatcher at low load) often finds all of them asleep,
// and the request waits up to 100 ms. This class makes a trivial callback call (a health
// Check) every `interval`, well under a second, so one of them is always polling.
//
// Used by the executor SDK and the dispatcher. Thread-safe; Start() once, Shutdown()
// (idempotent, joining) before the channel's server goes away.
class GrpcKeepWarm {
 public:
  // `channel` reaches a server with the standard health service, typically the process's own
  // server through Server::InProcessChannel().
  explicit GrpcKeepWarm(std::shared_ptr<grpc::Channel> channel,
                        absl::Duration interval = absl::Milliseconds(250),
                        Clock& clock = RealClock::Get());
  ~GrpcKeepWarm();
  GrpcKeepWarm(const GrpcKeepWarm&) = delete;
  GrpcKeepWarm& operator=(const GrpcKeepWarm&) = delete;

  void Start();
  void Shutdown();
  // Calls completed so far (tests).
  int64_t calls() const;

 private:
  void Loop();

  const std::shared_ptr<grpc::Channel> channel_;
  const absl::Duration interval_;
  Clock& clock_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool in_flight_ ABSL_GUARDED_BY(mu_) = false;
  int64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_GRPC_GRPC_KEEP_WARM_H_
