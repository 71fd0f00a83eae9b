#include "services/scheduler/leadership_service.h"

#include "common/grpc_status.h"
#include "common/proto_time.h"

namespace jobwheel::scheduler {

grpc::ServerUnaryReactor* LeadershipService::GetLeader(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::GetLeaderRequest* /*request*/,
    jobwheel::v1::GetLeaderResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  // One short indexed read on a pooled connection.
  auto info = elector_.ReadLeader(pool_);
  if (!info.ok()) {
    reactor->Finish(ToGrpcStatus(info.status()));
    return reactor;
  }
  response->set_holder_id(info->holder_id);
  if (info->since != absl::InfinitePast()) *response->mutable_since() = ToProto(info->since);
  response->set_epoch(info->epoch);
  response->set_replica_id(elector_.replica_id());
  response->set_is_leader(elector_.is_leader());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace jobwheel::scheduler
