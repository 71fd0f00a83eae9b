#ifndef JOBWHEEL_SDK_INTERNAL_HEARTBEAT_CLIENT_H_
#define JOBWHEEL_SDK_INTERNAL_HEARTBEAT_CLIENT_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "sdk/internal/executor_metrics.h"

namespace jobwheel::sdk {

// A new instance id: 128 random bits as 32 hex digits.
std::string NewInstanceId();

struct HeartbeatOptions {
  std::vector<std::string> targets;  // Tried in turn; see SplitRegistryTargets.
  std::string executor_token;
  // Sent as `register`. An empty instance_id is filled in with a random one (128 bits, hex)
  // when the client is made: the executor process's identity, the same on every reconnect.
  jobwheel::v1::ExecutorRegistration registration;
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
  // Until the registry's `registered` reply tells otherwise.
  absl::Duration default_beat_interval = absl::Seconds(1);
  // A stream without a `registered` reply this long after `register` is abandoned.
  absl::Duration register_timeout = absl::Seconds(5);
  // Shutdown waits this long for the registry to close the stream after `goodbye`.
  absl::Duration goodbye_timeout = absl::Seconds(3);
};

using RegistryStubFactory =
    std::function<std::unique_ptr<jobwheel::v1::RegistryService::StubInterface>(
        const std::string& target)>;

// Keeps the executor registered: one bidi RegistryService.Heartbeat stream at a time,
// `register` first, then a `beat` every interval (from the `registered` reply). Reconnects
// with jittered exponential backoff (initial_backoff doubling up to max_backoff), moving to
// the next target after each failure. Obeys instructions: REREGISTER sends `register` again
// on the same stream; DRAIN closes the stream and reconnects to the next target at once.
// Shutdown() sends `goodbye` and waits for the registry to close the stream. Every
// registration carries the same instance_id, so the registry accepts a reconnect of this
// process (through any replica) while refusing another process the address while it is online.
// Time (beats, backoff, deadlines) is `clock`'s. Thread-safe. Owns one session thread plus a
// reader thread per open stream.
class HeartbeatClient {
 public:
  // `fill_beat` sets running_job_ids, running and queued (seq is set here).
  HeartbeatClient(HeartbeatOptions options, RegistryStubFactory stub_factory,
                  std::function<void(jobwheel::v1::ExecutorBeat*)> fill_beat,
                  ExecutorMetrics& metrics, Clock& clock = RealClock::Get());
  ~HeartbeatClient();
  HeartbeatClient(const HeartbeatClient&) = delete;
  HeartbeatClient& operator=(const HeartbeatClient&) = delete;

  void Start();
  // Sends `goodbye` (when registered) and waits for the stream to close. Idempotent.
  void Shutdown(const std::string& reason);

  bool registered() const;
  // How many `registered` replies were received so far (tests).
  int64_t registrations() const;
  // The target of the current stream ("" when none).
  std::string current_target() const;
  // What every registration of this client carries as instance_id.
  const std::string& instance_id() const { return options_.registration.instance_id(); }

 private:
  enum class SessionEnd { kFailed, kWasRegistered, kDrained, kStopped };
  SessionEnd RunSession(const std::string& target);
  using HeartbeatStream = grpc::ClientReaderWriterInterface<jobwheel::v1::HeartbeatRequest,
                                                            jobwheel::v1::HeartbeatResponse>;
  // Sends goodbye and waits (up to goodbye_timeout) for the registry to close the stream.
  void SayGoodbye(HeartbeatStream& stream, const std::string& target, const std::string& reason);
  // Logs how a session ended: a goodbye, or a failure (the first of a run, then rarely).
  void LogSessionEnd(SessionEnd end, const grpc::Status& status, const std::string& target);
  void Loop();

  const HeartbeatOptions options_;
  const RegistryStubFactory stub_factory_;
  const std::function<void(jobwheel::v1::ExecutorBeat*)> fill_beat_;
  ExecutorMetrics& metrics_;
  Clock& clock_;

  // Waits go through clock_ (AwaitWithDeadline on conditions over these fields).
  mutable absl::Mutex mu_;
  std::deque<jobwheel::v1::HeartbeatResponse> inbox_ ABSL_GUARDED_BY(mu_);
  bool stream_done_ ABSL_GUARDED_BY(mu_) = false;
  bool goodbye_ ABSL_GUARDED_BY(mu_) = false;
  std::string goodbye_reason_ ABSL_GUARDED_BY(mu_);
  bool abort_ ABSL_GUARDED_BY(mu_) = false;  // Shutdown gave up waiting: cancel the stream.
  bool loop_done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* session_ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  int64_t registrations_ ABSL_GUARDED_BY(mu_) = 0;
  std::string current_target_ ABSL_GUARDED_BY(mu_);
  int64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
  absl::BitGen bitgen_ ABSL_GUARDED_BY(mu_);  // Backoff jitter.
  int failures_in_a_row_ = 0;                 // Session thread only.
  std::thread thread_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_HEARTBEAT_CLIENT_H_
