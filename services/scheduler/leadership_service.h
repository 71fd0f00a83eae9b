#ifndef JOBWHEEL_SERVICES_SCHEDULER_LEADERSHIP_SERVICE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_LEADERSHIP_SERVICE_H_

#include "jobwheel/v1/leadership.grpc.pb.h"
#include "services/scheduler/leader_elector.h"

namespace jobwheel::scheduler {

// LeadershipService/GetLeader: who holds the schedule lock, since when, and the epoch.
// Open to any caller on purpose (probes and operators use it to find the leader; it reveals
// only replica ids). It answers from the elector's in-memory snapshot, refreshed by the
// elector's own loop, so a call costs no database work and never blocks the callback
// thread: a flood of it costs what a flood of health checks costs.
class LeadershipService : public jobwheel::v1::LeadershipService::CallbackService {
 public:
  explicit LeadershipService(const LeaderElector& elector) : elector_(elector) {}

  grpc::ServerUnaryReactor* GetLeader(grpc::CallbackServerContext* ctx,
                                      const jobwheel::v1::GetLeaderRequest* request,
                                      jobwheel::v1::GetLeaderResponse* response) override;

 private:
  const LeaderElector& elector_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_LEADERSHIP_SERVICE_H_
