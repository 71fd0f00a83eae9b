#include "tools/jobwheelctl/executors_commands.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "tools/jobwheelctl/output.h"
#include "tools/jobwheelctl/terminal_text.h"

namespace jobwheel::ctl {
namespace {

// An admin, operator or viewer token: the executors of the apps it may read.
int ListExecutors(CommandContext& ctx) {
  auto stub = v1::RegistryService::NewStub(ctx.Registry());
  v1::ListExecutorsRequest req;
  req.set_app(ctx.options().app);
  v1::ListExecutorsResponse r;
  grpc::Status s = stub->ListExecutors(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(r);
  const std::vector<int> w = {14, 21, 8, 8, 23, 40, 10};
  Row({"APP", "ADDRESS", "RUNNING", "QUEUED", "LAST BEAT (UTC)", "HANDLERS", "STATE"}, w);
  for (const auto& e : r.executors()) {
    Row({e.app(), e.address(), absl::StrCat(e.running()), absl::StrCat(e.queued()),
         Time(e.last_beat_time()), absl::StrJoin(e.handlers(), ","),
         e.draining() ? "drained" : "routed"},
        w);
  }
  return 0;
}

// executors drain|undrain APP ADDRESS [--reason TEXT]: AppAdminService/SetExecutorDraining.
int SetDraining(CommandContext& ctx, bool draining) {
  const char* verb = draining ? "drain" : "undrain";
  if (ctx.args().size() != 2) {
    return ctx.Usage(absl::StrCat("executors ", verb, ": needs APP and ADDRESS (host:port)"));
  }
  auto stub = v1::AppAdminService::NewStub(ctx.Registry());
  v1::SetExecutorDrainingRequest req;
  req.set_app(ctx.args()[0]);
  req.set_address(ctx.args()[1]);
  req.set_draining(draining);
  req.set_reason(ctx.options().reason);
  v1::SetExecutorDrainingResponse resp;
  grpc::Status s = stub->SetExecutorDraining(ctx.Rpc().get(), req, &resp);
  if (!s.ok()) return ctx.RpcError(s);
  std::cout << "executor " << EscapeForTerminal(req.app()) << "/"
            << EscapeForTerminal(req.address())
            << (draining ? " drained: no new runs are routed to it" : " routed to again") << "\n";
  return 0;
}
int DrainExecutor(CommandContext& ctx) { return SetDraining(ctx, true); }
int UndrainExecutor(CommandContext& ctx) { return SetDraining(ctx, false); }

}  // namespace

Noun ExecutorsNoun() {
  return {"executors",
          {{"list", ListExecutors}, {"drain", DrainExecutor}, {"undrain", UndrainExecutor}}};
}

}  // namespace jobwheel::ctl
