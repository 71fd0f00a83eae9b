#include "tools/jobwheelctl/executors_commands.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "tools/jobwheelctl/output.h"

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
  const std::vector<int> w = {14, 21, 8, 8, 23, 40};
  Row({"APP", "ADDRESS", "RUNNING", "QUEUED", "LAST BEAT (UTC)", "HANDLERS"}, w);
  for (const auto& e : r.executors()) {
    Row({e.app(), e.address(), absl::StrCat(e.running()), absl::StrCat(e.queued()),
         Time(e.last_beat_time()), absl::StrJoin(e.handlers(), ",")},
        w);
  }
  return 0;
}

}  // namespace

Noun ExecutorsNoun() { return {"executors", {{"list", ListExecutors}}}; }

}  // namespace jobwheel::ctl
