#include "sdk/testing/fake_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/grpc/grpc_server.h"
#include "common/time/proto_time.h"

namespace jobwheel::sdk::testing {

using jobwheel::v1::HeartbeatRequest;
using jobwheel::v1::HeartbeatResponse;

FakeRegistry::FakeRegistry(std::string token, absl::Duration beat_interval)
    : token_(std::move(token)), beat_interval_(beat_interval) {}

FakeRegistry::~FakeRegistry() { Stop(); }

absl::StatusOr<std::string> FakeRegistry::Start(const std::string& address) {
  int port = 0;
  auto server = StartGrpcServer(address, {this}, {}, &port);
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
  return absl::StrCat("127.0.0.1:", port);
}

void FakeRegistry::Stop() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    server_.reset();
  }
}

grpc::Status FakeRegistry::Heartbeat(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<HeartbeatResponse, HeartbeatRequest>* stream) {
  TokenPolicy policy;
  policy.insecure_dev = token_.empty();
  policy.tokens = {token_};
  if (!CheckBearer(ctx->client_metadata(), policy).ok()) {
    absl::MutexLock lock(&mu_);
    ++unauthenticated_;
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid token");
  }
  std::deque<jobwheel::v1::HeartbeatInstruction> outbox;
  {
    absl::MutexLock lock(&mu_);
    ++total_;
    if (refuse_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "refusing");
    ++open_;
    outboxes_.push_back(&outbox);
  }
  HeartbeatRequest request;
  grpc::Status result = grpc::Status::OK;
  while (stream->Read(&request)) {
    HeartbeatResponse response;
    if (request.has_register_()) {
      {
        absl::MutexLock lock(&mu_);
        registrations_.push_back(request.register_());
      }
      response.mutable_registered()->set_replica_id("fake");
      *response.mutable_registered()->mutable_beat_interval() = ToProtoDuration(beat_interval_);
      *response.mutable_registered()->mutable_beat_deadline() = ToProtoDuration(beat_interval_ * 3);
      stream->Write(response);
    } else if (request.has_beat()) {
      std::deque<jobwheel::v1::HeartbeatInstruction> pending;
      {
        absl::MutexLock lock(&mu_);
        beats_.push_back(request.beat());
        pending.swap(outbox);
      }
      response.mutable_ack()->set_seq(request.beat().seq());
      stream->Write(response);
      for (const auto& instruction : pending) {
        HeartbeatResponse r;
        *r.mutable_instruction() = instruction;
        stream->Write(r);
      }
    } else if (request.has_goodbye()) {
      absl::MutexLock lock(&mu_);
      goodbyes_.push_back(request.goodbye().reason());
      break;
    }
  }
  absl::MutexLock lock(&mu_);
  --open_;
  outboxes_.erase(std::remove(outboxes_.begin(), outboxes_.end(), &outbox), outboxes_.end());
  return result;
}

void FakeRegistry::SetRefuse(bool refuse) {
  absl::MutexLock lock(&mu_);
  refuse_ = refuse;
}

void FakeRegistry::SendInstruction(jobwheel::v1::InstructionKind kind, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  jobwheel::v1::HeartbeatInstruction instruction;
  instruction.set_kind(kind);
  instruction.set_reason(reason);
  for (auto* outbox : outboxes_) outbox->push_back(instruction);
}

std::vector<jobwheel::v1::ExecutorRegistration> FakeRegistry::registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

std::vector<jobwheel::v1::ExecutorBeat> FakeRegistry::beats() const {
  absl::MutexLock lock(&mu_);
  return beats_;
}

std::vector<std::string> FakeRegistry::goodbyes() const {
  absl::MutexLock lock(&mu_);
  return goodbyes_;
}

int FakeRegistry::open_streams() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

int FakeRegistry::streams_total() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

int FakeRegistry::unauthenticated() const {
  absl::MutexLock lock(&mu_);
  return unauthenticated_;
}

}  // namespace jobwheel::sdk::testing
