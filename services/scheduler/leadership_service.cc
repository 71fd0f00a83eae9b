#include "services/scheduler/leadership_service.h"

#include "common/grpc/grpc_status.h"
#include "common/time/proto_time.h"

namespace jobwheel::scheduler {

grpc::ServerUnaryReactor* LeadershipService::GetLeader(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::GetLeaderRequest* /*request*/,
    jobwheel::v1::GetLeaderResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  // From memory: the elector's loop keeps this current (every retry_interval on a standby).
  absl::StatusOr<LeaderInfo> info = elector_.Leader();
  if (!info.ok()) {
    reactor->Finish(ToGrpcStatus(info.status()));
    return reactor;
  }
  response->set_holder_id(info->holder_id);
  if (info->since != absl::InfinitePast()) *response->mutable_since() = ToProto(info->since);
  response->set_epoch(info->epoch);
  response->set_replica_id(elector_.replica_id());
  // Not elector_.is_leader(): that waits for the lock connection, which a fenced transaction
  // may hold for a while.
  response->set_is_leader(info->holder_id == elector_.replica_id());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace jobwheel::scheduler
