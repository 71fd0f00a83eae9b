#include "sdk/internal/grpc_dispatcher_client.h"

#include <utility>

#include "common/auth/bearer.h"
#include "common/grpc/grpc_status.h"

namespace jobwheel::sdk {

GrpcDispatcherClient::GrpcDispatcherClient(
    std::unique_ptr<jobwheel::v1::DispatcherService::StubInterface> stub,
    std::string executor_token, absl::Duration timeout, const Clock& clock)
    : stub_(std::move(stub)), token_(std::move(executor_token)), timeout_(timeout), clock_(clock) {}

absl::StatusOr<ReportAnswer> GrpcDispatcherClient::ReportResults(
    const std::vector<jobwheel::v1::RunResult>& results) {
  jobwheel::v1::ReportResultsRequest request;
  for (const auto& r : results) *request.add_results() = r;
  jobwheel::v1::ReportResultsResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(clock_.Now() + timeout_));
  AddBearer(ctx, token_);
  grpc::Status status = stub_->ReportResults(&ctx, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  ReportAnswer answer;
  answer.acked.assign(response.acked_run_ids().begin(), response.acked_run_ids().end());
  answer.refused.assign(response.refused_run_ids().begin(), response.refused_run_ids().end());
  return answer;
}

}  // namespace jobwheel::sdk
