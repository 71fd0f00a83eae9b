#include "common/grpc/grpc_keep_warm.h"

#include <utility>

#include "grpc/health/v1/health.grpc.pb.h"

namespace jobwheel {

GrpcKeepWarm::GrpcKeepWarm(std::shared_ptr<grpc::Channel> channel, absl::Duration interval,
                           Clock& clock)
    : channel_(std::move(channel)), interval_(interval), clock_(clock) {}

GrpcKeepWarm::~GrpcKeepWarm() { Shutdown(); }

void GrpcKeepWarm::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

void GrpcKeepWarm::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

int64_t GrpcKeepWarm::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

void GrpcKeepWarm::Loop() {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  struct Call {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
  };
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    if (!in_flight_) {
      in_flight_ = true;
      auto* call = new Call;
      call->ctx.set_deadline(absl::ToChronoTime(clock_.Now() + absl::Seconds(5)));
      mu_.Unlock();
      // The completion is the point: it is delivered on a callback thread, which then polls
      // again with a fresh 1 s deadline.
      stub->async()->Check(&call->ctx, &call->request, &call->response, [this, call](grpc::Status) {
        delete call;
        absl::MutexLock lock(&mu_);
        in_flight_ = false;
        ++calls_;
      });
      mu_.Lock();
    }
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&stop_), clock_.Now() + interval_);
  }
  // The callback touches this object: wait for the call in flight.
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !in_flight_; };
  mu_.Await(absl::Condition(&done));
}

}  // namespace jobwheel
