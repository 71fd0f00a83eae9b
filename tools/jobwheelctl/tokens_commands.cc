#include "tools/jobwheelctl/tokens_commands.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/model/proto_enums.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"
#include "tools/jobwheelctl/output.h"
#include "tools/jobwheelctl/terminal_text.h"

namespace jobwheel::ctl {
namespace {

using v1::TokenAdminService;

std::unique_ptr<TokenAdminService::Stub> Stub(CommandContext& ctx) {
  return TokenAdminService::NewStub(ctx.Scheduler());
}

// The secret alone goes to stdout (once); the id and name to stderr.
int CreateToken(CommandContext& ctx) {
  const CtlOptions& o = ctx.options();
  v1::CreateTokenRequest req;
  req.set_name(o.name);
  const std::string role = absl::AsciiStrToUpper(o.role);
  v1::Role r = v1::ROLE_UNSPECIFIED;
  if (!v1::Role_Parse("ROLE_" + role, &r) || r == v1::ROLE_UNSPECIFIED) {
    return ctx.Usage("tokens create: --role must be admin, operator, viewer or executor");
  }
  req.set_role(r);
  for (absl::string_view app : absl::StrSplit(o.apps, ',', absl::SkipWhitespace())) {
    req.add_apps(std::string(absl::StripAsciiWhitespace(app)));
  }
  if (o.expire_in > absl::ZeroDuration()) {
    *req.mutable_expire_time() = ToProto(RealClock::Get().Now() + o.expire_in);
  }
  v1::CreateTokenResponse resp;
  grpc::Status s = Stub(ctx)->CreateToken(ctx.Rpc().get(), req, &resp);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(resp);
  std::cerr << "created token " << resp.token().id() << " ("
            << EscapeForTerminal(resp.token().name())
            << "); the secret below is shown only once:\n";
  std::cout << resp.secret() << "\n";
  return 0;
}

int ListTokens(CommandContext& ctx) {
  v1::ListTokensRequest req;
  req.set_include_revoked(ctx.options().include_revoked);
  v1::ListTokensResponse resp;
  grpc::Status s = Stub(ctx)->ListTokens(ctx.Rpc().get(), req, &resp);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(resp);
  const std::vector<int> w = {6, 20, 9, 24, 23, 23, 23};
  Row({"ID", "NAME", "ROLE", "APPS", "EXPIRES (UTC)", "REVOKED (UTC)", "LAST USED (UTC)"}, w);
  for (const auto& t : resp.tokens()) {
    Row({absl::StrCat(t.id()), t.name(), RoleShortName(t.role()),
         t.apps().empty() ? "*" : absl::StrJoin(t.apps(), ","), Time(t.expire_time()),
         Time(t.revoke_time()), Time(t.last_used_time())},
        w);
  }
  return 0;
}

int RevokeToken(CommandContext& ctx) {
  int64_t id = 0;
  if (!ctx.Id(&id)) return ctx.Usage("tokens revoke: needs a token id");
  v1::RevokeTokenRequest req;
  req.set_id(id);
  v1::RevokeTokenResponse resp;
  grpc::Status s = Stub(ctx)->RevokeToken(ctx.Rpc().get(), req, &resp);
  if (!s.ok()) return ctx.RpcError(s);
  std::cout << "revoked token " << id << " (" << EscapeForTerminal(resp.token().name())
            << "); servers refuse it within a few seconds\n";
  return 0;
}

int WhoAmI(CommandContext& ctx) {
  v1::GetCurrentTokenResponse resp;
  grpc::Status s = Stub(ctx)->GetCurrentToken(ctx.Rpc().get(), {}, &resp);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(resp);
  const v1::Token& t = resp.token();
  std::cout << EscapeForTerminal(t.name()) << " (id " << t.id() << "): " << RoleShortName(t.role())
            << " of " << (t.apps().empty() ? "every app" : absl::StrJoin(t.apps(), ", "))
            << ", expires " << Time(t.expire_time()) << "\n";
  return 0;
}

}  // namespace

Noun TokensNoun() {
  return {
      "tokens",
      {{"create", CreateToken}, {"list", ListTokens}, {"revoke", RevokeToken}, {"whoami", WhoAmI}}};
}

}  // namespace jobwheel::ctl
