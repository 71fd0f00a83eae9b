#include "services/scheduler/admin/token_admin_service.h"

#include <string>
#include <utility>

#include "common/grpc/grpc_status.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler::admin {

TokenAdminService::TokenAdminService(TokenAdmin& core, TokenAuthenticator& auth, int worker_threads)
    : core_(core), auth_(auth), pool_(worker_threads, 64) {}

TokenAdminService::~TokenAdminService() { pool_.Shutdown(); }

grpc::ServerUnaryReactor* TokenAdminService::Handle(
    grpc::CallbackServerContext* ctx, absl::string_view what, bool admin_only,
    std::function<absl::Status(const Principal&)> work) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  absl::optional<std::string> authorization = AuthorizationHeader(ctx->client_metadata());
  std::string peer = PeerHost(ctx->peer());  // Failed authentications are limited per peer.
  const bool queued = pool_.Submit([this, reactor, what = std::string(what), admin_only,
                                    authorization = std::move(authorization),
                                    peer = std::move(peer), work = std::move(work)]() {
    absl::StatusOr<Principal> p = auth_.Authorize(
        authorization, {Role::kAdmin, Role::kOperator, Role::kViewer}, "TokenAdminService", peer);
    absl::Status status = p.status();
    if (status.ok() && admin_only && !IsAdmin(*p)) status = PermissionDenied(*p, what, "ADMIN");
    if (status.ok()) {
      status = work(*p);
      if (status.ok() && admin_only) spdlog::info("token admin: {} by {}", what, p->name);
    }
    reactor->Finish(ToGrpcStatus(status));
  });
  if (!queued) {
    reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                 "token admin: too many calls in progress; retry later"));
  }
  return reactor;
}

grpc::ServerUnaryReactor* TokenAdminService::CreateToken(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::CreateTokenRequest* req,
    jobwheel::v1::CreateTokenResponse* resp) {
  return Handle(ctx, "CreateToken", /*admin_only=*/true,
                [this, req, resp](const Principal&) -> absl::Status {
                  auto r = core_.CreateToken(*req);
                  if (!r.ok()) return r.status();
                  *resp = *std::move(r);
                  return absl::OkStatus();
                });
}

grpc::ServerUnaryReactor* TokenAdminService::ListTokens(grpc::CallbackServerContext* ctx,
                                                        const jobwheel::v1::ListTokensRequest* req,
                                                        jobwheel::v1::ListTokensResponse* resp) {
  return Handle(ctx, "ListTokens", /*admin_only=*/true,
                [this, req, resp](const Principal&) -> absl::Status {
                  auto r = core_.ListTokens(*req);
                  if (!r.ok()) return r.status();
                  *resp = *std::move(r);
                  return absl::OkStatus();
                });
}

grpc::ServerUnaryReactor* TokenAdminService::RevokeToken(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::RevokeTokenRequest* req,
    jobwheel::v1::RevokeTokenResponse* resp) {
  return Handle(ctx, "RevokeToken", /*admin_only=*/true,
                [this, req, resp](const Principal&) -> absl::Status {
                  auto r = core_.RevokeToken(req->id());
                  if (!r.ok()) return r.status();
                  *resp->mutable_token() = *std::move(r);
                  return absl::OkStatus();
                });
}

grpc::ServerUnaryReactor* TokenAdminService::GetCurrentToken(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::GetCurrentTokenRequest*,
    jobwheel::v1::GetCurrentTokenResponse* resp) {
  return Handle(ctx, "GetCurrentToken", /*admin_only=*/false,
                [this, resp](const Principal& caller) -> absl::Status {
                  auto r = core_.CurrentToken(caller);
                  if (!r.ok()) return r.status();
                  *resp->mutable_token() = *std::move(r);
                  return absl::OkStatus();
                });
}

}  // namespace jobwheel::scheduler::admin
