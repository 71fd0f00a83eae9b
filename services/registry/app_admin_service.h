#ifndef JOBWHEEL_SERVICES_REGISTRY_APP_ADMIN_SERVICE_H_
#define JOBWHEEL_SERVICES_REGISTRY_APP_ADMIN_SERVICE_H_

#include "common/auth/token_authenticator.h"
#include "common/base/work_pool.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "services/registry/app_store.h"
#include "services/registry/executor_view.h"

namespace jobwheel::registry {

// The AppAdminService gRPC surface: authentication (on the WorkPool: writes need an ADMIN
// token, reads any admin-API role: ADMIN, OPERATOR or VIEWER), validation, then the AppStore;
// online_addresses come from the ExecutorView. A token scoped to apps reads only those:
// ListApps leaves the others out, GetApp of another is PERMISSION_DENIED. Thread-safe.
class AppAdminService final : public v1::AppAdminService::CallbackService {
 public:
  // `auth` must outlive this service.
  AppAdminService(AppStore& store, ExecutorView& view, WorkPool& pool, TokenAuthenticator& auth);

  grpc::ServerUnaryReactor* CreateApp(grpc::CallbackServerContext* context,
                                      const v1::CreateAppRequest* request,
                                      v1::CreateAppResponse* response) override;
  grpc::ServerUnaryReactor* UpdateApp(grpc::CallbackServerContext* context,
                                      const v1::UpdateAppRequest* request,
                                      v1::UpdateAppResponse* response) override;
  grpc::ServerUnaryReactor* GetApp(grpc::CallbackServerContext* context,
                                   const v1::GetAppRequest* request,
                                   v1::GetAppResponse* response) override;
  grpc::ServerUnaryReactor* ListApps(grpc::CallbackServerContext* context,
                                     const v1::ListAppsRequest* request,
                                     v1::ListAppsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteApp(grpc::CallbackServerContext* context,
                                      const v1::DeleteAppRequest* request,
                                      v1::DeleteAppResponse* response) override;
  // ADMIN, or an OPERATOR of the app.
  grpc::ServerUnaryReactor* SetExecutorDraining(grpc::CallbackServerContext* context,
                                                const v1::SetExecutorDrainingRequest* request,
                                                v1::SetExecutorDrainingResponse* response) override;

 private:
  // On the pool: authenticates (`write`: ADMIN only), then runs `fn` with the caller and
  // finishes with its status.
  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* context, bool write,
                                std::function<absl::Status(const Principal&)> fn);
  void FillOnline(v1::App* app) const;
  // CreateApp and UpdateApp: normalizes and validates `in` (the request's, which outlives the
  // call), writes it with `write` audited as `action`, and answers it in `out` with its online
  // addresses.
  using AppWrite = absl::StatusOr<v1::App> (AppStore::*)(const v1::App&, const v1::AuditEvent*);
  grpc::ServerUnaryReactor* WriteApp(grpc::CallbackServerContext* context, const v1::App& in,
                                     absl::string_view action, AppWrite write, v1::App* out);

  AppStore& store_;
  ExecutorView& view_;
  WorkPool& pool_;
  TokenAuthenticator& auth_;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_APP_ADMIN_SERVICE_H_
