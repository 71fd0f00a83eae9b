#include "services/xxl_gateway/result_sink.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"

namespace jobwheel::xxl {

absl::StatusOr<ReportOutcome> GrpcResultSink::Report(
    const std::string& executor_token, const std::vector<jobwheel::v1::RunResult>& results) {
  grpc::ClientContext ctx;
  AddBearer(ctx, executor_token);
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout_)));
  jobwheel::v1::ReportResultsRequest req;
  for (const auto& r : results) *req.add_results() = r;
  jobwheel::v1::ReportResultsResponse resp;
  grpc::Status s = stub_->ReportResults(&ctx, req, &resp);
  if (!s.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "ReportResults: code ", static_cast<int>(s.error_code()), ": ", s.error_message()));
  }
  ReportOutcome out;
  out.acked.assign(resp.acked_run_ids().begin(), resp.acked_run_ids().end());
  out.refused.assign(resp.refused_run_ids().begin(), resp.refused_run_ids().end());
  return out;
}

}  // namespace jobwheel::xxl
