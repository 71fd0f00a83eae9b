#include "common/grpc/unary_on_pool.h"

#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "common/auth/failed_auth_limiter.h"
#include "common/grpc/grpc_status.h"

namespace jobwheel {

grpc::Status PoolFullStatus(absl::string_view service) {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      absl::StrCat(service, ": too many calls in progress; retry later"));
}

grpc::ServerUnaryReactor* AuthorizeOnPool(grpc::CallbackServerContext* ctx, WorkPool& pool,
                                          TokenAuthenticator& auth, absl::string_view service,
                                          std::function<absl::Status(const Principal&)> work) {
  static constexpr Role kAnyAdminRole[] = {Role::kAdmin, Role::kOperator, Role::kViewer};
  return AuthorizeOnPool(ctx, pool, auth, service, kAnyAdminRole, std::move(work));
}

grpc::ServerUnaryReactor* AuthorizeOnPool(grpc::CallbackServerContext* ctx, WorkPool& pool,
                                          TokenAuthenticator& auth, absl::string_view service,
                                          absl::Span<const Role> roles,
                                          std::function<absl::Status(const Principal&)> work) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  // Copied now: the context's metadata is not to be read from another thread.
  absl::optional<std::string> authorization = AuthorizationHeader(ctx->client_metadata());
  std::string peer = PeerHost(ctx->peer());
  ForwardedClient forwarded = ReadForwardedClient(ctx->client_metadata());
  const bool queued = pool.Submit([reactor, &auth, service = std::string(service),
                                   roles = absl::InlinedVector<Role, 4>(roles.begin(), roles.end()),
                                   authorization = std::move(authorization), peer = std::move(peer),
                                   forwarded = std::move(forwarded), work = std::move(work)] {
    // A front end's clients each count on their own (LimitKey), the others on their address.
    const std::string key = auth.LimitKey(forwarded, peer);
    absl::StatusOr<Principal> p = auth.Authorize(authorization, roles, service, key);
    absl::Status status = p.status();
    if (status.ok()) status = work(*p);
    reactor->Finish(ToGrpcStatus(status));
  });
  if (!queued) reactor->Finish(PoolFullStatus(service));
  return reactor;
}

}  // namespace jobwheel
