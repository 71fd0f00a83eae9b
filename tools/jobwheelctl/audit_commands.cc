#include "tools/jobwheelctl/audit_commands.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "tools/jobwheelctl/output.h"

namespace jobwheel::ctl {
namespace {

int ListAuditEvents(CommandContext& ctx) {
  const CtlOptions& o = ctx.options();
  auto stub = v1::JobAdminService::NewStub(ctx.Scheduler());
  v1::ListAuditEventsRequest req;
  req.set_actor(o.actor);
  req.set_target(o.target);
  req.set_action(o.action);
  if (o.since > absl::ZeroDuration()) {
    *req.mutable_start_time() = ToProto(RealClock::Get().Now() - o.since);
  }
  req.set_page_size(o.limit);
  v1::ListAuditEventsResponse r;
  grpc::Status s = stub->ListAuditEvents(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(r);
  const std::vector<int> w = {7, 23, 16, 14, 12, 36, 21};
  Row({"ID", "TIME (UTC)", "ACTOR", "ACTION", "TARGET", "CHANGED", "PEER"}, w);
  for (const auto& e : r.events()) {
    std::vector<std::string> fields;
    for (const auto& c : e.changes()) fields.push_back(c.field());
    Row({absl::StrCat(e.id()), Time(e.time()), e.actor_name(), e.action(), e.target(),
         absl::StrJoin(fields, ","), e.peer()},
        w);
  }
  return 0;
}

}  // namespace

Noun AuditNoun() { return {"audit", {{"list", ListAuditEvents}}}; }

}  // namespace jobwheel::ctl
