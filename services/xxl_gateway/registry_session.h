#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_REGISTRY_SESSION_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_REGISTRY_SESSION_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/registry.grpc.pb.h"

namespace jobwheel::xxl {

using RegistryStubFactory =
    std::function<std::unique_ptr<jobwheel::v1::RegistryService::StubInterface>(
        const std::string& target)>;

// Keeps one identity registered: a RegistryService.Heartbeat stream with the XXL executor's
// token as bearer, `register` first, then a beat every interval; reconnects with backoff to the
// next target (REREGISTER and DRAIN obeyed). The registry decides whether the token may
// register this app: its refusal is kept in last_error(). Shutdown() sends `goodbye` and waits
// for the stream to close. Owns one thread plus a reader per stream. Thread-safe.
class RegistrySession {
 public:
  struct Options {
    std::vector<std::string> targets;
    std::string token;
    jobwheel::v1::ExecutorRegistration registration;
    absl::Duration max_backoff = absl::Seconds(2);
    absl::Duration register_timeout = absl::Seconds(5);
  };
  RegistrySession(Options options, RegistryStubFactory stubs,
                  std::function<void(jobwheel::v1::ExecutorBeat*)> fill_beat, Clock& clock);
  ~RegistrySession();

  void Start();
  // Waits until the first registration is accepted (OK) or refused (the registry's status),
  // or `timeout` passes (UNAVAILABLE).
  absl::Status AwaitFirstOutcome(absl::Duration timeout);
  void Shutdown(const std::string& reason);
  bool registered() const;
  absl::Status last_error() const;

 private:
  enum class End { kFailed, kWasRegistered, kDrained, kStopped };
  void Loop();
  End RunSession(const std::string& target);

  const Options options_;
  const RegistryStubFactory stubs_;
  const std::function<void(jobwheel::v1::ExecutorBeat*)> fill_beat_;
  Clock& clock_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::string stop_reason_ ABSL_GUARDED_BY(mu_);
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  bool outcome_ ABSL_GUARDED_BY(mu_) = false;  // A first registration or refusal happened.
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::deque<jobwheel::v1::HeartbeatResponse> inbox_ ABSL_GUARDED_BY(mu_);
  bool stream_done_ ABSL_GUARDED_BY(mu_) = false;
  int64_t seq_ = 0;  // Session thread only.
  std::thread thread_;
};

// 128 random bits as 32 hex digits (OpenSSL's CSPRNG): an identity's instance_id.
std::string NewInstanceId();

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_REGISTRY_SESSION_H_
