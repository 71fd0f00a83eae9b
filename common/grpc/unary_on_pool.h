#ifndef JOBWHEEL_COMMON_GRPC_UNARY_ON_POOL_H_
#define JOBWHEEL_COMMON_GRPC_UNARY_ON_POOL_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/auth/token_authenticator.h"
#include "common/base/work_pool.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel {

// The admin APIs' unary handler: authenticate the caller's API token (ADMIN, OPERATOR or
// VIEWER; failed attempts limited per peer) and run `work` with its principal — both on `pool`,
// because authentication may query the database and must not block gRPC's callback threads.
// A full pool answers RESOURCE_EXHAUSTED "<service>: too many calls in progress; retry later"
// at once, so an overload is visible to clients instead of queuing without bound.
grpc::ServerUnaryReactor* AuthorizeOnPool(grpc::CallbackServerContext* ctx, WorkPool& pool,
                                          TokenAuthenticator& auth, absl::string_view service,
                                          std::function<absl::Status(const Principal&)> work);
// The same for callers of other roles (e.g. executors reporting results); `roles` is copied.
grpc::ServerUnaryReactor* AuthorizeOnPool(grpc::CallbackServerContext* ctx, WorkPool& pool,
                                          TokenAuthenticator& auth, absl::string_view service,
                                          absl::Span<const Role> roles,
                                          std::function<absl::Status(const Principal&)> work);

// The overload answer of AuthorizeOnPool, for handlers that submit to a pool themselves.
grpc::Status PoolFullStatus(absl::string_view service);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_GRPC_UNARY_ON_POOL_H_
