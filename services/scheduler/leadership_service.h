#ifndef JOBWHEEL_SERVICES_SCHEDULER_LEADERSHIP_SERVICE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_LEADERSHIP_SERVICE_H_

#include "common/pg_pool.h"
#include "jobwheel/v1/leadership.grpc.pb.h"
#include "services/scheduler/leader_elector.h"

namespace jobwheel::scheduler {

// LeadershipService/GetLeader: who holds the schedule lock, since when, and the epoch.
// Open to any caller: it reveals only replica ids.
class LeadershipService : public jobwheel::v1::LeadershipService::CallbackService {
 public:
  LeadershipService(LeaderElector& elector, PgPool& pool) : elector_(elector), pool_(pool) {}

  grpc::ServerUnaryReactor* GetLeader(grpc::CallbackServerContext* ctx,
                                      const jobwheel::v1::GetLeaderRequest* request,
                                      jobwheel::v1::GetLeaderResponse* response) override;

 private:
  LeaderElector& elector_;
  PgPool& pool_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_LEADERSHIP_SERVICE_H_
