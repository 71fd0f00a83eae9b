#include "services/console/backend_health.h"

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace jobwheel::console {

BackendHealth::BackendHealth(
    std::vector<std::pair<std::string, std::shared_ptr<grpc::Channel>>> backends)
    : backends_(std::move(backends)) {}

absl::Status BackendHealth::Check(absl::Time deadline) const {
  for (const auto& [name, channel] : backends_) {
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(deadline));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    grpc::Status s = stub->Check(&ctx, request, &response);
    if (!s.ok()) {
      return absl::UnavailableError(absl::StrCat(name, ": ", s.error_message()));
    }
    if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
      return absl::UnavailableError(absl::StrCat(
          name, ": ",
          grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status())));
    }
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::console
