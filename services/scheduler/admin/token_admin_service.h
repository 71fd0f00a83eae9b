#ifndef JOBWHEEL_SERVICES_SCHEDULER_ADMIN_TOKEN_ADMIN_SERVICE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ADMIN_TOKEN_ADMIN_SERVICE_H_

#include <functional>

#include "absl/status/status.h"
#include "common/auth/token_authenticator.h"
#include "common/base/work_pool.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"
#include "services/scheduler/admin/token_admin.h"

namespace jobwheel::scheduler::admin {

// The gRPC surface of TokenAdmin (callback API). ADMIN tokens only, except GetCurrentToken,
// which any ADMIN, OPERATOR or VIEWER token may call: operators and viewers get
// PERMISSION_DENIED, executor and cluster tokens UNAUTHENTICATED. Calls run on a small
// WorkPool. The gRPC server must be shut down before this object is destroyed.
class TokenAdminService final : public jobwheel::v1::TokenAdminService::CallbackService {
 public:
  TokenAdminService(TokenAdmin& core, TokenAuthenticator& auth, int worker_threads = 2);
  ~TokenAdminService() override;

  grpc::ServerUnaryReactor* CreateToken(grpc::CallbackServerContext* ctx,
                                        const jobwheel::v1::CreateTokenRequest* req,
                                        jobwheel::v1::CreateTokenResponse* resp) override;
  grpc::ServerUnaryReactor* ListTokens(grpc::CallbackServerContext* ctx,
                                       const jobwheel::v1::ListTokensRequest* req,
                                       jobwheel::v1::ListTokensResponse* resp) override;
  grpc::ServerUnaryReactor* RevokeToken(grpc::CallbackServerContext* ctx,
                                        const jobwheel::v1::RevokeTokenRequest* req,
                                        jobwheel::v1::RevokeTokenResponse* resp) override;
  grpc::ServerUnaryReactor* GetCurrentToken(grpc::CallbackServerContext* ctx,
                                            const jobwheel::v1::GetCurrentTokenRequest* req,
                                            jobwheel::v1::GetCurrentTokenResponse* resp) override;

 private:
  // On the pool: authenticates (ADMIN only when `admin_only`), runs `work` with the caller and
  // finishes the call with its status.
  grpc::ServerUnaryReactor* Handle(grpc::CallbackServerContext* ctx, absl::string_view what,
                                   bool admin_only,
                                   std::function<absl::Status(const Principal&)> work);

  TokenAdmin& core_;
  TokenAuthenticator& auth_;
  WorkPool pool_;
};

}  // namespace jobwheel::scheduler::admin

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ADMIN_TOKEN_ADMIN_SERVICE_H_
