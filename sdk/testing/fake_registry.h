#ifndef JOBWHEEL_SDK_TESTING_FAKE_REGISTRY_H_
#define JOBWHEEL_SDK_TESTING_FAKE_REGISTRY_H_

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/registry.grpc.pb.h"

namespace jobwheel::sdk::testing {

// An in-process RegistryService speaking the Heartbeat protocol as the real one does:
// `registered` after `register`, an `ack` per beat, stream closed after `goodbye`. Tests can
// queue instructions (sent after the next beat), refuse streams, and inspect what arrived.
// Thread-safe.
class FakeRegistry final : public jobwheel::v1::RegistryService::Service {
 public:
  explicit FakeRegistry(std::string token = "",
                        absl::Duration beat_interval = absl::Milliseconds(100));
  ~FakeRegistry() override;

  // Serves on `address` (default any free port); returns "127.0.0.1:<port>".
  absl::StatusOr<std::string> Start(const std::string& address = "127.0.0.1:0");
  void Stop();

  grpc::Status Heartbeat(grpc::ServerContext* ctx,
                         grpc::ServerReaderWriter<jobwheel::v1::HeartbeatResponse,
                                                  jobwheel::v1::HeartbeatRequest>* stream) override;

  // Streams are answered UNAVAILABLE right away while refusing.
  void SetRefuse(bool refuse);
  // Sent on every open stream after its next beat.
  void SendInstruction(jobwheel::v1::InstructionKind kind, const std::string& reason);

  std::vector<jobwheel::v1::ExecutorRegistration> registrations() const;
  std::vector<jobwheel::v1::ExecutorBeat> beats() const;
  std::vector<std::string> goodbyes() const;
  int open_streams() const;
  int streams_total() const;
  int unauthenticated() const;

 private:
  const std::string token_;
  const absl::Duration beat_interval_;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  bool refuse_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<jobwheel::v1::ExecutorRegistration> registrations_ ABSL_GUARDED_BY(mu_);
  std::vector<jobwheel::v1::ExecutorBeat> beats_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> goodbyes_ ABSL_GUARDED_BY(mu_);
  // Per open stream: instructions waiting to be sent.
  std::vector<std::deque<jobwheel::v1::HeartbeatInstruction>*> outboxes_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  int total_ ABSL_GUARDED_BY(mu_) = 0;
  int unauthenticated_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace jobwheel::sdk::testing

#endif  // JOBWHEEL_SDK_TESTING_FAKE_REGISTRY_H_
