#include "services/registry/app_admin_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/audit/audit_event.h"
#include "common/base/log_text.h"
#include "common/grpc/unary_on_pool.h"
#include "services/registry/validation.h"
#include "spdlog/spdlog.h"

namespace jobwheel::registry {
namespace {

constexpr size_t kMaxDrainReason = 256;

v1::App Normalized(const v1::App& in) {
  v1::App app;
  app.set_name(in.name());
  app.set_title(in.title());
  app.set_address_type(in.address_type() == v1::ADDRESS_TYPE_UNSPECIFIED ? v1::ADDRESS_TYPE_AUTO
                                                                         : in.address_type());
  *app.mutable_manual_addresses() = in.manual_addresses();
  return app;
}

}  // namespace

AppAdminService::AppAdminService(AppStore& store, ExecutorView& view, WorkPool& pool,
                                 TokenAuthenticator& auth)
    : store_(store), view_(view), pool_(pool), auth_(auth) {}

grpc::ServerUnaryReactor* AppAdminService::Run(grpc::CallbackServerContext* context, bool write,
                                               std::function<absl::Status(const Principal&)> fn) {
  auto checked = [write, fn = std::move(fn)](const Principal& p) -> absl::Status {
    if (write && !IsAdmin(p)) return PermissionDenied(p, "AppAdminService", "ADMIN");
    return fn(p);
  };
  return AuthorizeOnPool(context, pool_, auth_, "AppAdminService", std::move(checked));
}

void AppAdminService::FillOnline(v1::App* app) const {
  app->clear_online_addresses();
  for (std::string& a : view_.RegisteredAddresses(app->name())) {
    app->add_online_addresses(std::move(a));
  }
}

grpc::ServerUnaryReactor* AppAdminService::WriteApp(grpc::CallbackServerContext* context,
                                                    const v1::App& in, absl::string_view action,
                                                    AppWrite write, v1::App* out) {
  const std::string peer = context->peer(), request_id = AuditRequestId(*context);
  return Run(context, /*write=*/true,
             [this, &in, action = std::string(action), write, out, peer,
              request_id](const Principal& p) -> absl::Status {
               v1::App app = Normalized(in);
               absl::Status s = ValidateApp(app);
               if (!s.ok()) return s;
               const v1::AuditEvent audit = AuditOf(p, action, peer, request_id);
               auto written = (store_.*write)(app, &audit);
               if (!written.ok()) return written.status();
               *out = *std::move(written);
               FillOnline(out);
               return absl::OkStatus();
             });
}

grpc::ServerUnaryReactor* AppAdminService::CreateApp(grpc::CallbackServerContext* context,
                                                     const v1::CreateAppRequest* request,
                                                     v1::CreateAppResponse* response) {
  return WriteApp(context, request->app(), "CreateApp", &AppStore::Create, response->mutable_app());
}

grpc::ServerUnaryReactor* AppAdminService::UpdateApp(grpc::CallbackServerContext* context,
                                                     const v1::UpdateAppRequest* request,
                                                     v1::UpdateAppResponse* response) {
  return WriteApp(context, request->app(), "UpdateApp", &AppStore::Update, response->mutable_app());
}

grpc::ServerUnaryReactor* AppAdminService::GetApp(grpc::CallbackServerContext* context,
                                                  const v1::GetAppRequest* request,
                                                  v1::GetAppResponse* response) {
  return Run(context, /*write=*/false,
             [this, request, response](const Principal& caller) -> absl::Status {
               absl::Status s = ValidateAppName(request->name(), "name");
               if (!s.ok()) return s;
               if (!CanReadApp(caller, request->name())) {
                 return PermissionDenied(caller, "name",
                                         absl::StrCat("read access to app ", request->name()));
               }
               auto app = store_.Get(request->name());
               if (!app.ok()) return app.status();
               *response->mutable_app() = *std::move(app);
               FillOnline(response->mutable_app());
               return absl::OkStatus();
             });
}

grpc::ServerUnaryReactor* AppAdminService::ListApps(grpc::CallbackServerContext* context,
                                                    const v1::ListAppsRequest* /*request*/,
                                                    v1::ListAppsResponse* response) {
  return Run(context, /*write=*/false, [this, response](const Principal& caller) -> absl::Status {
    auto apps = store_.List();
    if (!apps.ok()) return apps.status();
    for (v1::App& app : *apps) {
      if (!CanReadApp(caller, app.name())) continue;
      FillOnline(&app);
      *response->add_apps() = std::move(app);
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AppAdminService::DeleteApp(grpc::CallbackServerContext* context,
                                                     const v1::DeleteAppRequest* request,
                                                     v1::DeleteAppResponse* /*response*/) {
  const std::string peer = context->peer(), request_id = AuditRequestId(*context);
  return Run(context, /*write=*/true,
             [this, request, peer, request_id](const Principal& p) -> absl::Status {
               absl::Status s = ValidateAppName(request->name(), "name");
               if (!s.ok()) return s;
               const v1::AuditEvent audit = AuditOf(p, "DeleteApp", peer, request_id);
               return store_.Delete(request->name(), &audit);
             });
}

grpc::ServerUnaryReactor* AppAdminService::SetExecutorDraining(
    grpc::CallbackServerContext* context, const v1::SetExecutorDrainingRequest* request,
    v1::SetExecutorDrainingResponse* /*response*/) {
  const std::string peer = context->peer(), request_id = AuditRequestId(*context);
  return Run(
      context, /*write=*/false,
      [this, request, peer, request_id](const Principal& caller) -> absl::Status {
        if (absl::Status s = ValidateAppName(request->app(), "app"); !s.ok()) return s;
        if (absl::Status s = ValidateAddress(request->address(), "address"); !s.ok()) return s;
        if (request->reason().size() > kMaxDrainReason) {
          return absl::InvalidArgumentError(
              absl::StrCat("reason: longer than ", kMaxDrainReason, " characters"));
        }
        if (!CanWriteApp(caller, request->app())) {
          return PermissionDenied(caller, "app",
                                  absl::StrCat("ADMIN, or OPERATOR of app ", request->app()));
        }
        const v1::AuditEvent audit = AuditOf(caller, "SetExecutorDraining", peer, request_id);
        absl::Status s = store_.SetDraining(request->app(), request->address(), request->draining(),
                                            request->reason(), caller.name, &audit);
        if (s.ok()) {
          spdlog::info(
              "executor {}/{} {} by {}{}", request->app(), request->address(),
              request->draining() ? "drained" : "no longer drained", caller.name,
              request->reason().empty() ? "" : absl::StrCat(": ", LogText(request->reason())));
        }
        return s;
      });
}

}  // namespace jobwheel::registry
