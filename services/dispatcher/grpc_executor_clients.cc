#include "services/dispatcher/grpc_executor_clients.h"

#include <chrono>

#include "common/auth/bearer.h"
#include "common/grpc/grpc_status.h"
#include "common/model/instance_tag.h"

namespace jobwheel::dispatcher {

absl::Status GrpcExecutorClients::Prepare(grpc::ClientContext& ctx, absl::string_view app,
                                          absl::string_view address,
                                          absl::Duration deadline) const {
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::microseconds(absl::ToInt64Microseconds(deadline)));
  return AddCallerToken(ctx, signer_, ExecutorAudience(app, address));
}

template <typename Request, typename Response, typename Start>
void GrpcExecutorClients::CallAsync(absl::string_view app, absl::string_view address,
                                    Request request, absl::Duration deadline,
                                    std::function<void(absl::StatusOr<Response>)> done,
                                    Start start) {
  auto stub = stubs_.Get(address);
  if (!stub.ok()) {
    done(stub.status());
    return;
  }
  struct Call {
    grpc::ClientContext ctx;
    Request request;
    Response response;
    std::shared_ptr<v1::ExecutorService::Stub> stub;  // Outlives the call.
    std::function<void(absl::StatusOr<Response>)> done;
  };
  auto* call = new Call;
  call->request = std::move(request);
  call->stub = *stub;
  call->done = std::move(done);
  if (absl::Status auth = Prepare(call->ctx, app, address, deadline); !auth.ok()) {
    call->done(auth);
    delete call;
    return;
  }
  // The executor is online (the registry says so), but after it restarted at the same address
  // the cached channel may still be in reconnect backoff: wait for it within the deadline
  // instead of failing at once.
  call->ctx.set_wait_for_ready(true);
  start(*call->stub, &call->ctx, &call->request, &call->response, [call](grpc::Status s) {
    if (s.ok()) {
      call->done(std::move(call->response));
    } else {
      call->done(FromGrpcStatus(s));
    }
    delete call;
  });
}

void GrpcExecutorClients::RunBatchAsync(absl::string_view app, absl::string_view address,
                                        v1::RunBatchRequest request, absl::Duration deadline,
                                        RunBatchCallback done) {
  CallAsync<v1::RunBatchRequest, v1::RunBatchResponse>(
      app, address, std::move(request), deadline, std::move(done),
      [](v1::ExecutorService::Stub& stub, grpc::ClientContext* ctx, const v1::RunBatchRequest* req,
         v1::RunBatchResponse* resp, std::function<void(grpc::Status)> on_done) {
        stub.async()->RunBatch(ctx, req, resp, std::move(on_done));
      });
}

absl::Status GrpcExecutorClients::Beat(absl::string_view app, absl::string_view address,
                                       absl::Duration deadline) {
  auto stub = stubs_.Get(address);
  if (!stub.ok()) return stub.status();
  grpc::ClientContext ctx;
  if (absl::Status auth = Prepare(ctx, app, address, deadline); !auth.ok()) return auth;
  v1::BeatResponse response;
  return FromGrpcStatus((*stub)->Beat(&ctx, v1::BeatRequest(), &response));
}

absl::StatusOr<v1::IdleBeatResponse> GrpcExecutorClients::IdleBeat(absl::string_view app,
                                                                   absl::string_view address,
                                                                   int64_t job_id,
                                                                   absl::Duration deadline) {
  auto stub = stubs_.Get(address);
  if (!stub.ok()) return stub.status();
  grpc::ClientContext ctx;
  if (absl::Status auth = Prepare(ctx, app, address, deadline); !auth.ok()) return auth;
  v1::IdleBeatRequest request;
  request.set_job_id(job_id);
  v1::IdleBeatResponse response;
  grpc::Status s = (*stub)->IdleBeat(&ctx, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

absl::StatusOr<v1::GetRunsResponse> GrpcExecutorClients::GetRuns(absl::string_view app,
                                                                 absl::string_view address,
                                                                 const v1::GetRunsRequest& request,
                                                                 absl::Duration deadline) {
  auto stub = stubs_.Get(address);
  if (!stub.ok()) return stub.status();
  grpc::ClientContext ctx;
  if (absl::Status auth = Prepare(ctx, app, address, deadline); !auth.ok()) return auth;
  ctx.set_wait_for_ready(true);
  v1::GetRunsResponse response;
  grpc::Status s = (*stub)->GetRuns(&ctx, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

}  // namespace jobwheel::dispatcher
