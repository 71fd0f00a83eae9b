#include "services/dispatcher/dispatcher_service.h"

#include <string>
#include <utility>

#include "common/grpc/grpc_status.h"
#include "common/grpc/unary_on_pool.h"

namespace jobwheel::dispatcher {

grpc::ServerUnaryReactor* DispatcherServiceImpl::Dispatch(grpc::CallbackServerContext* ctx,
                                                          const v1::DispatchRequest* request,
                                                          v1::DispatchResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  absl::Status auth = CheckBearer(ctx->client_metadata(), dispatch_policy_);
  if (!auth.ok()) {
    reactor->Finish(ToGrpcStatus(auth));
    return reactor;
  }
  if (absl::Status valid = ValidateDispatchRequest(*request, limits_); !valid.ok()) {
    reactor->Finish(ToGrpcStatus(valid));
    return reactor;
  }
  const bool queued = db_work_.Submit([this, reactor, request, response] {
    absl::StatusOr<v1::DispatchResponse> r = dispatcher_.Dispatch(*request);
    if (r.ok()) *response = std::move(*r);
    reactor->Finish(ToGrpcStatus(r.status()));
  });
  if (!queued) reactor->Finish(PoolFullStatus("DispatcherService/Dispatch"));
  return reactor;
}

grpc::ServerUnaryReactor* DispatcherServiceImpl::ReportResults(
    grpc::CallbackServerContext* ctx, const v1::ReportResultsRequest* request,
    v1::ReportResultsResponse* response) {
  return AuthorizeOnPool(
      ctx, db_work_, executor_auth_, "DispatcherService/ReportResults", {Role::kExecutor},
      [this, request, response](const Principal& p) -> absl::Status {
        if (absl::Status valid = ValidateReportResultsRequest(*request, limits_); !valid.ok()) {
          return valid;
        }
        // A per-app executor token reports only runs of its apps.
        AppScope scope;
        if (!p.insecure_dev && !p.all_apps) scope = p.apps;
        absl::StatusOr<v1::ReportResultsResponse> r = dispatcher_.ReportResults(*request, scope);
        if (r.ok()) *response = std::move(*r);
        return r.status();
      });
}

}  // namespace jobwheel::dispatcher
