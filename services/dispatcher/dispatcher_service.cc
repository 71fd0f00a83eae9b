#include "services/dispatcher/dispatcher_service.h"

#include <string>
#include <utility>

#include "common/auth/failed_auth_limiter.h"
#include "common/grpc/grpc_status.h"

namespace jobwheel::dispatcher {
namespace {

const grpc::Status kBusy(grpc::StatusCode::UNAVAILABLE,
                         "dispatcher busy or shutting down: database work queue full; retry");

}  // namespace

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
  if (!queued) reactor->Finish(kBusy);
  return reactor;
}

grpc::ServerUnaryReactor* DispatcherServiceImpl::ReportResults(
    grpc::CallbackServerContext* ctx, const v1::ReportResultsRequest* request,
    v1::ReportResultsResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  // Copied here: authentication may query the database, so it runs on the pool.
  absl::optional<std::string> authorization = AuthorizationHeader(ctx->client_metadata());
  std::string peer = PeerHost(ctx->peer());  // Failed authentications are limited per peer.
  const bool queued =
      db_work_.Submit([this, reactor, request, response, authorization = std::move(authorization),
                       peer = std::move(peer)] {
        absl::StatusOr<Principal> p = executor_auth_.Authorize(
            authorization, {Role::kExecutor}, "DispatcherService/ReportResults", peer);
        if (!p.ok()) {
          reactor->Finish(ToGrpcStatus(p.status()));
          return;
        }
        if (absl::Status valid = ValidateReportResultsRequest(*request, limits_); !valid.ok()) {
          reactor->Finish(ToGrpcStatus(valid));
          return;
        }
        // A per-app executor token reports only runs of its apps.
        AppScope scope;
        if (!p->insecure_dev && !p->all_apps) scope = p->apps;
        absl::StatusOr<v1::ReportResultsResponse> r = dispatcher_.ReportResults(*request, scope);
        if (r.ok()) *response = std::move(*r);
        reactor->Finish(ToGrpcStatus(r.status()));
      });
  if (!queued) reactor->Finish(kBusy);
  return reactor;
}

}  // namespace jobwheel::dispatcher
