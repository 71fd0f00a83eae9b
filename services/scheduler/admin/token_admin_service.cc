#include "services/scheduler/admin/token_admin_service.h"

#include <string>
#include <utility>

#include "common/audit/audit_event.h"
#include "common/grpc/unary_on_pool.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler::admin {

TokenAdminService::TokenAdminService(TokenAdmin& core, TokenAuthenticator& auth, int worker_threads)
    : core_(core), auth_(auth), pool_(worker_threads, 64) {}

TokenAdminService::~TokenAdminService() { pool_.Shutdown(); }

grpc::ServerUnaryReactor* TokenAdminService::Handle(
    grpc::CallbackServerContext* ctx, absl::string_view what, bool admin_only,
    std::function<absl::Status(const Principal&)> work) {
  auto checked = [what = std::string(what), admin_only,
                  work = std::move(work)](const Principal& p) -> absl::Status {
    if (admin_only && !IsAdmin(p)) return PermissionDenied(p, what, "ADMIN");
    absl::Status status = work(p);
    if (status.ok() && admin_only) spdlog::info("token admin: {} by {}", what, p.name);
    return status;
  };
  return AuthorizeOnPool(ctx, pool_, auth_, "TokenAdminService", std::move(checked));
}

grpc::ServerUnaryReactor* TokenAdminService::CreateToken(
    grpc::CallbackServerContext* ctx, const jobwheel::v1::CreateTokenRequest* req,
    jobwheel::v1::CreateTokenResponse* resp) {
  const std::string peer = ctx->peer(), request_id = AuditRequestId(*ctx);
  return Handle(ctx, "CreateToken", /*admin_only=*/true,
                [this, req, resp, peer, request_id](const Principal& p) -> absl::Status {
                  const jobwheel::v1::AuditEvent audit =
                      AuditOf(p, "CreateToken", peer, request_id);
                  auto r = core_.CreateToken(*req, &audit);
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
  const std::string peer = ctx->peer(), request_id = AuditRequestId(*ctx);
  return Handle(ctx, "RevokeToken", /*admin_only=*/true,
                [this, req, resp, peer, request_id](const Principal& p) -> absl::Status {
                  const jobwheel::v1::AuditEvent audit =
                      AuditOf(p, "RevokeToken", peer, request_id);
                  auto r = core_.RevokeToken(req->id(), &audit);
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
