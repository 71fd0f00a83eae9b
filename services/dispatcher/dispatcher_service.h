#ifndef JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_SERVICE_H_
#define JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_SERVICE_H_

#include <utility>

#include "common/auth/bearer.h"
#include "common/auth/token_authenticator.h"
#include "common/base/work_pool.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "services/dispatcher/dispatcher.h"
#include "services/dispatcher/request_validation.h"

namespace jobwheel::dispatcher {

// The DispatcherService gRPC surface (callback API): checks the bearer token (Dispatch: a
// token the scheduler signed for audience "dispatcher"; ReportResults: any EXECUTOR token, the
// bootstrap one or a per-app API token, resolved on the pool, with failed authentications
// limited per peer host), checks the request (INVALID_ARGUMENT naming the field, see
// request_validation.h), then runs the core call on `db_work`, a bounded pool sized to the
// database pool, so reactor threads never block on PostgreSQL. A full pool answers
// RESOURCE_EXHAUSTED at once, like every service (PoolFullStatus; the callers retry). With a
// per-app executor token only results for runs of its apps are recorded and acknowledged.
class DispatcherServiceImpl final : public v1::DispatcherService::CallbackService {
 public:
  // `executor_auth` must outlive this service.
  // `dispatch_policy`: who may call Dispatch (the scheduler's signed tokens).
  DispatcherServiceImpl(Dispatcher& dispatcher, WorkPool& db_work, TokenPolicy dispatch_policy,
                        TokenAuthenticator& executor_auth, RequestLimits limits = RequestLimits())
      : dispatcher_(dispatcher),
        db_work_(db_work),
        dispatch_policy_(std::move(dispatch_policy)),
        executor_auth_(executor_auth),
        limits_(limits) {}

  grpc::ServerUnaryReactor* Dispatch(grpc::CallbackServerContext* ctx,
                                     const v1::DispatchRequest* request,
                                     v1::DispatchResponse* response) override;
  grpc::ServerUnaryReactor* ReportResults(grpc::CallbackServerContext* ctx,
                                          const v1::ReportResultsRequest* request,
                                          v1::ReportResultsResponse* response) override;

 private:
  Dispatcher& dispatcher_;
  WorkPool& db_work_;
  const TokenPolicy dispatch_policy_;
  TokenAuthenticator& executor_auth_;
  const RequestLimits limits_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_DISPATCHER_SERVICE_H_
