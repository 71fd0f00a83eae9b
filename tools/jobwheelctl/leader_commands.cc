#include "tools/jobwheelctl/leader_commands.h"

#include <iostream>

#include "jobwheel/v1/leadership.grpc.pb.h"
#include "tools/jobwheelctl/output.h"
#include "tools/jobwheelctl/terminal_text.h"

namespace jobwheel::ctl {
namespace {

int GetLeader(CommandContext& ctx) {
  auto stub = v1::LeadershipService::NewStub(ctx.Scheduler());
  v1::GetLeaderResponse r;
  grpc::Status s = stub->GetLeader(ctx.Rpc().get(), {}, &r);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(r);
  std::cout << "leader: " << (r.holder_id().empty() ? "(none)" : EscapeForTerminal(r.holder_id()))
            << "  epoch: " << r.epoch() << "  since: " << Time(r.since())
            << "  answered by: " << EscapeForTerminal(r.replica_id()) << "\n";
  return 0;
}

}  // namespace

Noun LeaderNoun() { return {"leader", {}, GetLeader}; }

}  // namespace jobwheel::ctl
