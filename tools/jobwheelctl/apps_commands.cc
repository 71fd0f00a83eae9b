#include "tools/jobwheelctl/apps_commands.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "tools/jobwheelctl/output.h"

namespace jobwheel::ctl {
namespace {

int ListApps(CommandContext& ctx) {
  auto stub = v1::AppAdminService::NewStub(ctx.Registry());
  v1::ListAppsResponse r;
  grpc::Status s = stub->ListApps(ctx.Rpc().get(), {}, &r);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(r);
  const std::vector<int> w = {16, 24, 8, 50};
  Row({"APP", "TITLE", "TYPE", "ONLINE"}, w);
  for (const auto& app : r.apps()) {
    Row({app.name(), app.title(), app.address_type() == v1::ADDRESS_TYPE_MANUAL ? "manual" : "auto",
         absl::StrJoin(app.online_addresses(), ",")},
        w);
  }
  return 0;
}

}  // namespace

Noun AppsNoun() { return {"apps", {{"list", ListApps}}}; }

}  // namespace jobwheel::ctl
