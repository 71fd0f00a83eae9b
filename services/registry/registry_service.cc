#include "services/registry/registry_service.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth/failed_auth_limiter.h"
#include "common/base/log_text.h"
#include "common/grpc/grpc_status.h"
#include "common/grpc/unary_on_pool.h"
#include "services/registry/stream_write_queue.h"
#include "services/registry/token_session_credential.h"
#include "services/registry/validation.h"
#include "spdlog/spdlog.h"

namespace jobwheel::registry {
namespace {

constexpr absl::string_view kHeartbeat = "RegistryService/Heartbeat";

}  // namespace

// One executor's heartbeat stream. Reads one message at a time; writes go
// through a queue (acks, the registration reply and instructions from the
// Registry may overlap). Every way out first calls Registry::CloseSession (on
// the pool), then Finish after queued writes.
class RegistryService::HeartbeatReactor final
    : public grpc::ServerBidiReactor<v1::HeartbeatRequest, v1::HeartbeatResponse>,
      public SessionSink {
 public:
  HeartbeatReactor(RegistryService* service, grpc::CallbackServerContext* context)
      : service_(service),
        peer_(context->peer()),
        peer_host_(PeerHost(peer_)),
        caller_(CallerOf(*context)),
        authorization_(AuthorizationHeader(context->client_metadata())) {
    // A missing token is refused at once (counted as a failure of the peer, with no database
    // lookup); a present one is checked (possibly against the database) on the pool with the
    // Register message, which names the app.
    if (!authorization_.has_value() && !service_->options_.authenticator->insecure_dev()) {
      absl::Status refused =
          service_->options_.authenticator
              ->Authorize(authorization_, {Role::kExecutor}, kHeartbeat, peer_host_)
              .status();
      service_->metrics_.registrations_rejected.Increment();
      if (auto v = service_->refusal_log_.Admit(peer_host_); v.log) {
        spdlog::warn("heartbeat from {} refused: {}{}", LogText(peer_), LogText(refused.message()),
                     LogRateLimiter::SuppressedNote(v.suppressed));
      }
      closing_ = true;
      Finish(ToGrpcStatus(refused));
      return;
    }
    session_ = service_->registry_.OpenSession(this);
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      BeginClose(grpc::Status::OK);  // The client half-closed, cancelled or went away.
      return;
    }
    switch (request_.kind_case()) {
      case v1::HeartbeatRequest::kRegister: {
        v1::ExecutorRegistration reg = request_.register_();
        if (!service_->pool_.Submit([this, reg] { DoRegister(reg); })) {
          BeginClose(PoolFullStatus(kHeartbeat));
        }
        return;
      }
      case v1::HeartbeatRequest::kBeat: {
        auto seq = service_->registry_.Beat(session_, request_.beat());
        if (!seq.ok()) {
          BeginClose(ToGrpcStatus(seq.status()));
          return;
        }
        v1::HeartbeatResponse ack;
        ack.mutable_ack()->set_seq(*seq);
        writes_.Enqueue(std::move(ack));
        ContinueReading();
        return;
      }
      case v1::HeartbeatRequest::kGoodbye: {
        std::string reason = request_.goodbye().reason();
        {
          absl::MutexLock lock(&mu_);
          if (closing_) return;
          closing_ = true;
        }
        service_->pool_.SubmitMustRun([this, reason] {
          absl::Status s = service_->registry_.Goodbye(session_, reason);
          service_->registry_.CloseSession(session_);
          writes_.FinishAfterWrites(ToGrpcStatus(s));
        });
        return;
      }
      default:
        BeginClose(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                "heartbeat: message has no register, beat or goodbye"));
    }
  }

  // A failed write (a broken stream) ends nothing here: the pending read fails too.
  void OnWriteDone(bool ok) override { writes_.OnWriteDone(ok); }

  void OnDone() override { delete this; }

  // SessionSink (called with the Registry's lock held: only queue work).
  void SendInstruction(v1::InstructionKind kind, const std::string& reason) override {
    v1::HeartbeatResponse r;
    r.mutable_instruction()->set_kind(kind);
    r.mutable_instruction()->set_reason(reason);
    writes_.Enqueue(std::move(r));
  }
  void Close(const absl::Status& status) override { BeginClose(ToGrpcStatus(status)); }

 private:
  // The peer and, with mutual TLS, the verified client certificate's subjectAltNames.
  static CallerIdentity CallerOf(const grpc::CallbackServerContext& context) {
    CallerIdentity c;
    c.peer = context.peer();
    std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
    if (auth != nullptr && auth->IsPeerAuthenticated()) {
      c.certificate_verified = true;
      for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_PEER_DNS_PROPERTY_NAME)) {
        c.certificate_dns_names.emplace_back(v.data(), v.size());
      }
      for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_PEER_IP_PROPERTY_NAME)) {
        c.certificate_ips.emplace_back(v.data(), v.size());
      }
    }
    return c;
  }

  // The advertised address must be the caller's own (AddressPolicy); a malformed one is left
  // to Registry::Register's INVALID_ARGUMENT.
  absl::Status CheckAddress(const v1::ExecutorRegistration& reg) const {
    static const AddressPolicy* const kStrictest = new AddressPolicy(AddressPolicyOptions());
    const AddressPolicy* policy = service_->options_.address_policy != nullptr
                                      ? service_->options_.address_policy
                                      : kStrictest;
    if (!ValidateAddress(reg.address(), "register.address").ok()) return absl::OkStatus();
    return policy->Check(reg.app(), reg.address(), caller_);
  }

  // EXECUTOR token whose apps include reg.app (the bootstrap executor token serves all).
  absl::Status Authorize(const v1::ExecutorRegistration& reg) {
    if (!principal_.has_value()) {
      // Failed authentications are limited per peer, as on every admin service.
      absl::StatusOr<Principal> p = service_->options_.authenticator->Authorize(
          authorization_, {Role::kExecutor}, kHeartbeat, peer_host_);
      if (!p.ok()) return p.status();
      principal_ = *std::move(p);
    }
    if (!CanServeApp(*principal_, reg.app())) {
      return PermissionDenied(*principal_, "register.app",
                              absl::StrCat("an EXECUTOR token for app ", reg.app()));
    }
    return absl::OkStatus();
  }

  void DoRegister(const v1::ExecutorRegistration& reg) {
    absl::Status auth = Authorize(reg);
    if (auth.ok()) auth = CheckAddress(reg);
    if (!auth.ok()) {
      service_->metrics_.registrations_rejected.Increment();
      if (auto v = service_->refusal_log_.Admit(peer_host_); v.log) {
        spdlog::warn("registration of {}/{} from {} refused: {}{}", LogText(reg.app()),
                     LogText(reg.address()), LogText(peer_), LogText(auth.message()),
                     LogRateLimiter::SuppressedNote(v.suppressed));
      }
      BeginClose(ToGrpcStatus(auth));
      return;
    }
    std::shared_ptr<SessionCredential> credential;
    if (!service_->options_.authenticator->insecure_dev()) {
      credential = std::make_shared<TokenSessionCredential>(*service_->options_.authenticator,
                                                            authorization_, reg.app());
    }
    RegistrationOrigin origin;
    if (principal_.has_value() && !principal_->insecure_dev) {
      origin.token = absl::StrCat(principal_->token_id, "/", principal_->name);
    }
    origin.peer = peer_host_;
    auto registered =
        service_->registry_.Register(session_, reg, std::move(credential), std::move(origin));
    if (!registered.ok()) {
      if (auto v = service_->refusal_log_.Admit(peer_host_); v.log) {
        spdlog::info("registration of {}/{} failed: {}{}", LogText(reg.app()),
                     LogText(reg.address()), LogText(registered.status().ToString()),
                     LogRateLimiter::SuppressedNote(v.suppressed));
      }
      BeginClose(ToGrpcStatus(registered.status()));
      return;
    }
    v1::HeartbeatResponse r;
    *r.mutable_registered() = *std::move(registered);
    writes_.Enqueue(std::move(r));
    ContinueReading();
  }

  void ContinueReading() {
    {
      absl::MutexLock lock(&mu_);
      if (closing_) return;
    }
    StartRead(&request_);
  }

  // Takes the session offline (blocking, so on the pool) and finishes the
  // stream.
  void BeginClose(grpc::Status status) {
    {
      absl::MutexLock lock(&mu_);
      if (closing_) return;
      closing_ = true;
    }
    service_->pool_.SubmitMustRun([this, status] {
      service_->registry_.CloseSession(session_);
      writes_.FinishAfterWrites(status);
    });
  }

  RegistryService* const service_;
  const std::string peer_;
  const std::string peer_host_;  // PeerHost(peer_): the key of the failed-authentication limit.
  const CallerIdentity caller_;
  const absl::optional<std::string> authorization_;
  absl::optional<Principal> principal_;  // Set by the first Register (on the pool).
  int64_t session_ = 0;
  v1::HeartbeatRequest request_;

  absl::Mutex mu_;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  // Acks, the registration reply and the Registry's instructions may overlap.
  StreamWriteQueue<grpc::ServerBidiReactor<v1::HeartbeatRequest, v1::HeartbeatResponse>,
                   v1::HeartbeatResponse>
      writes_{this};
};

// One WatchExecutors stream: the view's snapshot, then its events, in order.
class RegistryService::WatchReactor final
    : public grpc::ServerWriteReactor<v1::WatchExecutorsResponse> {
 public:
  WatchReactor(RegistryService* service, grpc::CallbackServerContext* context,
               const v1::WatchExecutorsRequest* request)
      : service_(service) {
    absl::Status s = CheckBearer(context->client_metadata(), service_->options_.watch_policy);
    if (s.ok() && !request->app().empty()) s = ValidateAppName(request->app(), "app");
    if (!s.ok()) {
      writes_.FinishAfterWrites(ToGrpcStatus(s));
      return;
    }
    {
      absl::MutexLock lock(&service_->mu_);
      service_->watchers_.insert(this);
    }
    registered_ = true;
    service_->metrics_.watchers.Increment();
    subscription_ = service_->view_.Subscribe(
        request->app(), [this](const v1::WatchExecutorsResponse& e) { Enqueue(e); });
  }

  void OnWriteDone(bool ok) override {
    writes_.OnWriteDone(ok, grpc::Status(grpc::StatusCode::CANCELLED, "watcher went away"));
  }

  void OnCancel() override { Close(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled")); }

  void OnDone() override {
    if (registered_) {
      service_->view_.Unsubscribe(subscription_);
      {
        absl::MutexLock lock(&service_->mu_);
        service_->watchers_.erase(this);
      }
      service_->metrics_.watchers.Decrement();
    }
    delete this;
  }

  void Close(const grpc::Status& status) { writes_.FinishAfterWrites(status); }

 private:
  // Called with the view's lock held.
  void Enqueue(const v1::WatchExecutorsResponse& event) {
    if (writes_.Enqueue(event) == Queue::Queued::kOverflow) {
      // Too slow: cut off rather than buffered without bound; it will resubscribe. The write in
      // flight completes, then the stream finishes.
      spdlog::warn("cutting off a WatchExecutors stream {} events behind",
                   service_->options_.max_watch_backlog);
    }
  }

  using Queue = StreamWriteQueue<grpc::ServerWriteReactor<v1::WatchExecutorsResponse>,
                                 v1::WatchExecutorsResponse>;

  RegistryService* const service_;
  bool registered_ = false;
  int64_t subscription_ = 0;
  Queue writes_{this, service_->options_.max_watch_backlog,
                grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                             "watcher too slow; reconnect for a fresh snapshot")};
};

RegistryService::RegistryService(Registry& registry, ExecutorView& view, WorkPool& pool,
                                 RegistryMetrics& metrics, Options options)
    : registry_(registry),
      view_(view),
      pool_(pool),
      metrics_(metrics),
      options_(std::move(options)),
      refusal_log_(LogRateLimiter::Options(), *options_.clock) {}

grpc::ServerBidiReactor<v1::HeartbeatRequest, v1::HeartbeatResponse>* RegistryService::Heartbeat(
    grpc::CallbackServerContext* context) {
  return new HeartbeatReactor(this, context);
}

grpc::ServerUnaryReactor* RegistryService::ListExecutors(grpc::CallbackServerContext* context,
                                                         const v1::ListExecutorsRequest* request,
                                                         v1::ListExecutorsResponse* response) {
  // API tokens (the console, operators) may need a database lookup: on the pool.
  return AuthorizeOnPool(context, pool_, *options_.authenticator, "RegistryService/ListExecutors",
                         [this, request, response](const Principal& p) -> absl::Status {
                           absl::Status s = ListReadableExecutors(p, request->app(), response);
                           if (s.ok()) FillLoad(response);
                           return s;
                         });
}

absl::Status RegistryService::ListReadableExecutors(const Principal& p, const std::string& app,
                                                    v1::ListExecutorsResponse* response) const {
  if (!app.empty()) {
    absl::Status s = ValidateAppName(app, "app");
    if (!s.ok()) return s;
    // As JobAdminService's lists: naming an app outside the token's scope is refused.
    if (!CanReadApp(p, app)) {
      return PermissionDenied(p, "app", absl::StrCat("read access to app ", app));
    }
    for (v1::Executor& e : view_.List(app)) *response->add_executors() = std::move(e);
    return absl::OkStatus();
  }
  const bool every_app = !ReadableApps(p).has_value();
  for (v1::Executor& e : view_.List("")) {
    if (every_app || CanReadApp(p, e.app())) *response->add_executors() = std::move(e);
  }
  return absl::OkStatus();
}

void RegistryService::FillLoad(v1::ListExecutorsResponse* response) const {
  if (options_.load_store == nullptr || response->executors().empty()) return;
  std::vector<ExecutorKey> keys;
  for (const v1::Executor& e : response->executors()) keys.push_back({e.app(), e.address()});
  absl::StatusOr<std::vector<v1::Executor>> rows = options_.load_store->GetOnline(keys);
  if (!rows.ok()) {
    // The list itself is right; only the load figures are as of registration.
    spdlog::warn("ListExecutors: reading executor load failed: {}", rows.status().ToString());
    return;
  }
  std::map<ExecutorKey, const v1::Executor*> by_key;
  for (const v1::Executor& row : *rows) by_key[{row.app(), row.address()}] = &row;
  for (v1::Executor& e : *response->mutable_executors()) {
    auto it = by_key.find({e.app(), e.address()});
    if (it == by_key.end()) continue;
    e.set_running(it->second->running());
    e.set_queued(it->second->queued());
    *e.mutable_last_beat_time() = it->second->last_beat_time();
  }
}

grpc::ServerWriteReactor<v1::WatchExecutorsResponse>* RegistryService::WatchExecutors(
    grpc::CallbackServerContext* context, const v1::WatchExecutorsRequest* request) {
  return new WatchReactor(this, context, request);
}

void RegistryService::CloseWatchers() {
  absl::MutexLock lock(&mu_);
  for (WatchReactor* w : watchers_) {
    w->Close(grpc::Status(grpc::StatusCode::UNAVAILABLE, "registry replica shutting down"));
  }
}

}  // namespace jobwheel::registry
