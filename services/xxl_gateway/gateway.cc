#include "services/xxl_gateway/gateway.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/model/instance_tag.h"
#include "services/xxl_gateway/xxl_protocol.h"
#include "spdlog/spdlog.h"

namespace jobwheel::xxl {

namespace v1 = jobwheel::v1;

// One bridged XXL executor. `op_mu` serialises its registrations and offline transitions;
// the pointers are set once under it and live as long as the Gateway.
struct Gateway::Identity {
  absl::Mutex op_mu;
  IdentityRecord record;  // Guarded by op_mu.
  IdentityInfo info;      // The current one (token, instance); guarded by op_mu.
  std::unique_ptr<IdentityRuns> runs;
  std::unique_ptr<IdentityExecutorService> service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<RegistrySession> session;
  std::atomic<bool> alive{false};
  std::atomic<bool> probing{false};
  std::atomic<bool> ticking{false};
  std::atomic<int64_t> last_ok_ms{0};
  int failed_probes = 0;  // In a row; guarded by op_mu.
  // Objects of an earlier token or instance: pool tasks may still hold them, so they are kept.
  std::vector<std::unique_ptr<IdentityRuns>> retired_runs;
  std::vector<std::unique_ptr<IdentityExecutorService>> retired_services;
};

namespace {

// True when `host` (a name or an IP literal) resolves to `peer_ip`.
bool ResolvesTo(const std::string& host, const std::string& peer_ip) {
  if (host == peer_ip) return true;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  bool match = false;
  for (addrinfo* a = res; a != nullptr && !match; a = a->ai_next) {
    char buf[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, buf, sizeof(buf), nullptr, 0, NI_NUMERICHOST) == 0) {
      std::string ip = buf;
      match = ip == peer_ip || (absl::StartsWith(peer_ip, "::ffff:") && ip == peer_ip.substr(7));
    }
  }
  freeaddrinfo(res);
  return match;
}

bool IsAuthRefusal(const absl::Status& s) {
  return absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s);
}

}  // namespace

Gateway::Gateway(GatewayOptions options, StateDir& state, XxlClient& xxl, ResultSink& results,
                 RegistryStubFactory registry_stubs, GatewayMetrics& metrics, Clock& clock)
    : options_(std::move(options)),
      state_(state),
      ledger_(state),
      xxl_(xxl),
      results_(results),
      registry_stubs_(std::move(registry_stubs)),
      metrics_(metrics),
      clock_(clock),
      limiter_(FailedAuthLimiter::Options{}, clock),
      pool_(16, 4096),
      probe_pool_(8, 4096) {}

Gateway::~Gateway() { Shutdown(); }

absl::Status Gateway::Start() {
  if (absl::Status s = ledger_.Load(); !s.ok()) return s;
  auto records = state_.LoadIdentities();
  if (!records.ok()) return records.status();
  for (IdentityRecord& r : *records) {
    auto id = std::make_unique<Identity>();
    Identity& ref = *id;
    {
      absl::MutexLock lock(&mu_);
      identities_[IdentityKey(r.app(), r.url())] = std::move(id);
    }
    absl::MutexLock op(&ref.op_mu);
    ref.record = std::move(r);
    if (absl::Status s = Serve(ref); !s.ok()) {
      spdlog::error("identity {} {}: {}", ref.record.app(), ref.record.url(), s.ToString());
      continue;
    }
    ref.runs->Restore();
    spdlog::info("restored {} {} on port {} ({})", ref.record.app(), ref.record.url(),
                 ref.record.port(), ref.record.live() ? "probing" : "offline");
  }
  prober_ = std::thread([this] { ProbeLoop(); });
  return absl::OkStatus();
}

void Gateway::Shutdown() {
  std::vector<Identity*> all;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [key, id] : identities_) all.push_back(id.get());
  }
  if (prober_.joinable()) prober_.join();
  probe_pool_.Shutdown();
  for (Identity* id : all) {
    absl::MutexLock op(&id->op_mu);
    // No goodbye: a restarted gateway takes the same identities back (same instance ids).
    if (id->session != nullptr) id->session.reset();
  }
  for (Identity* id : all) {
    if (id->server != nullptr)
      id->server->Shutdown(absl::ToChronoTime(clock_.Now() + absl::Seconds(2)));
  }
  pool_.Shutdown();
}

int Gateway::live_identities() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [key, id] : identities_) n += id->alive.load() ? 1 : 0;
  return n;
}

int Gateway::PortOf(const std::string& app, const std::string& url_base) const {
  absl::MutexLock lock(&mu_);
  auto it = identities_.find(IdentityKey(app, url_base));
  if (it == identities_.end()) return 0;
  absl::MutexLock op(&it->second->op_mu);
  return it->second->record.port();
}

int Gateway::FreePort() const {
  std::set<int> used = unusable_ports_;
  for (const auto& [key, id] : identities_) used.insert(id->record.port());
  for (int p = options_.port_from; p <= options_.port_to; ++p) {
    if (!used.count(p)) return p;
  }
  return 0;
}

absl::Status Gateway::CheckCaller(const std::string& token, const std::string& peer_ip) {
  if (!limiter_.Allowed(peer_ip)) {
    metrics_.auth_failures().Increment();
    return absl::ResourceExhaustedError(
        "too many failed authentications from this address; retry later");
  }
  if (token.empty()) {
    limiter_.RecordFailure(peer_ip);
    metrics_.auth_failures().Increment();
    return absl::UnauthenticatedError(
        "missing XXL-JOB-ACCESS-TOKEN: set xxl.job.accessToken to a jobwheel EXECUTOR token of "
        "this app");
  }
  if (token.size() > 1024) {
    limiter_.RecordFailure(peer_ip);
    metrics_.auth_failures().Increment();
    return absl::UnauthenticatedError("XXL-JOB-ACCESS-TOKEN: too long");
  }
  return absl::OkStatus();
}

void Gateway::Persist(Identity& id) {
  if (absl::Status s = state_.SaveIdentity(id.record); !s.ok()) {
    spdlog::error("identity {} {}: {}", id.record.app(), id.record.url(), s.ToString());
  }
}

absl::Status Gateway::Serve(Identity& id) {
  const std::string address = absl::StrCat(options_.advertise_host, ":", id.record.port());
  id.info.key = IdentityKey(id.record.app(), id.record.url());
  id.info.app = id.record.app();
  id.info.url = id.record.url();
  id.info.token = id.record.token();
  id.info.address = address;
  id.info.instance = jobwheel::InstanceTag(id.record.instance_id());
  ExecutorCallers callers;
  callers.insecure_dev = options_.insecure_dev;
  if (!options_.insecure_dev) {
    CallerTokenVerifier::Options vo;
    vo.public_keys_pem = options_.caller_public_keys;
    vo.audience = ExecutorAudience(id.record.app(), address);
    auto verifier = CallerTokenVerifier::Create(vo, clock_);
    if (!verifier.ok()) return verifier.status();
    callers.verifier = std::move(*verifier);
  }
  IdentityRunsOptions ro = options_.runs;
  ro.allow_scripts = options_.script_apps.count(id.record.app()) > 0;
  id.runs = std::make_unique<IdentityRuns>(
      id.info, ro, ledger_, xxl_, results_, metrics_, clock_,
      [this](std::function<void()> f) { pool_.SubmitMustRun(std::move(f)); });
  Identity* self = &id;
  id.service = std::make_unique<IdentityExecutorService>(
      *id.runs, std::move(callers), pool_, metrics_, [self] { return self->alive.load(); });
  auto server = StartGrpcServer(absl::StrCat(options_.bind_host, ":", id.record.port()),
                                {id.service.get()}, options_.server_tls);
  if (!server.ok()) {
    return absl::UnavailableError(
        absl::StrCat("port ", id.record.port(), ": cannot serve: ", server.status().message()));
  }
  id.server = std::move(*server);
  return absl::OkStatus();
}

absl::Status Gateway::StartSession(Identity& id) {
  v1::ExecutorRegistration reg;
  reg.set_app(id.record.app());
  reg.set_address(id.info.address);
  reg.set_instance_id(id.record.instance_id());
  reg.set_sdk_version(absl::StrCat("xxl-job-executor (via xxl_gateway ", options_.version, ")"));
  reg.set_capacity(options_.capacity);
  reg.set_allow_scripts(options_.script_apps.count(id.record.app()) > 0);
  (*reg.mutable_labels())["jobwheel.protocol"] = "xxl-job";
  (*reg.mutable_labels())["xxl.address"] = id.record.url();
  auto handlers = options_.app_handlers.find(id.record.app());
  if (handlers != options_.app_handlers.end()) {
    for (const std::string& h : handlers->second) reg.add_handlers(h);
  }
  reg.add_handlers("*");
  RegistrySession::Options so;
  so.targets = options_.registry_targets;
  so.token = id.record.token();
  so.registration = reg;
  IdentityRuns* runs = id.runs.get();
  id.session = std::make_unique<RegistrySession>(
      so, registry_stubs_,
      [runs](v1::ExecutorBeat* beat) {
        IdentityRuns::Load load = runs->TotalLoad();
        beat->set_running(load.running);
        beat->set_queued(load.queued);
        for (int64_t job : runs->RunningJobIds()) beat->add_running_job_ids(job);
      },
      clock_);
  id.session->Start();
  absl::Status outcome = id.session->AwaitFirstOutcome(options_.register_wait);
  if (!outcome.ok()) {
    id.session->Shutdown("registration refused");
    id.session.reset();
    return outcome;
  }
  id.alive = true;
  id.last_ok_ms = absl::ToUnixMillis(clock_.Now());
  return absl::OkStatus();
}

absl::Status Gateway::Register(const RegistryParam& param, const std::string& token,
                               const std::string& peer_ip) {
  if (absl::Status s = CheckCaller(token, peer_ip); !s.ok()) {
    metrics_.RegistrationRefused("token");
    return s;
  }
  auto url = ParseExecutorUrl(param.registry_value());
  if (!url.ok()) {
    metrics_.RegistrationRefused("invalid");
    return url.status();
  }
  if (!ResolvesTo(url->host, peer_ip)) {
    metrics_.RegistrationRefused("address");
    return absl::PermissionDeniedError(
        absl::StrCat("registryValue host ", url->host, " is not the caller's address ", peer_ip,
                     ": an executor registers its own address only"));
  }
  Identity* id = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("gateway shutting down");
    auto it = identities_.find(IdentityKey(param.registry_key(), url->base));
    if (it == identities_.end()) {
      const int port = FreePort();
      if (port == 0) {
        metrics_.RegistrationRefused("ports");
        return absl::ResourceExhaustedError("no free port left in the gateway's --executor_ports");
      }
      auto created = std::make_unique<Identity>();
      created->record.set_app(param.registry_key());
      created->record.set_url(url->base);
      created->record.set_port(port);
      id = created.get();
      identities_[IdentityKey(param.registry_key(), url->base)] = std::move(created);
    } else {
      id = it->second.get();
    }
  }
  absl::MutexLock op(&id->op_mu);
  const bool same_token = !id->record.token().empty() &&
                          ConstantTimeEquals(Sha256Hex(id->record.token()), Sha256Hex(token));
  if (same_token && id->session != nullptr && id->session->registered()) {
    return absl::OkStatus();  // The 30 s registry call of a live executor.
  }
  if (same_token && id->session != nullptr) {
    // Registered before, reconnecting now: the registry's last word.
    absl::Status last = id->session->last_error();
    return last.ok() ? absl::OkStatus() : last;
  }
  if (id->session != nullptr) {  // Another token: a new process of this executor.
    id->session->Shutdown("executor re-registered with another token");
    id->session.reset();
  }
  const bool restart = !id->record.live() || !same_token || id->record.instance_id().empty();
  if (restart) {
    id->record.set_instance_id(NewInstanceId());
    if (id->runs != nullptr) id->runs->Abandon("the XXL executor registered anew");
  }
  id->record.set_token(token);
  if (id->server == nullptr || id->info.token != token || restart) {
    if (id->server == nullptr) {
      absl::Status s = Serve(*id);
      // A port of the range taken by another process: the next free one, a few times.
      for (int tries = 0; !s.ok() && id->record.live() == false && tries < 8; ++tries) {
        int port = 0;
        {
          absl::MutexLock lock(&mu_);
          unusable_ports_.insert(id->record.port());
          port = FreePort();
        }
        if (port == 0) break;
        spdlog::warn("{}; trying port {}", std::string(s.message()), port);
        id->record.set_port(port);
        s = Serve(*id);
      }
      if (!s.ok()) return s;
    } else {
      // Same port; a new token or instance for the identity's runs and checks.
      id->server->Shutdown(absl::ToChronoTime(clock_.Now() + absl::Seconds(1)));
      id->server.reset();
      id->retired_runs.push_back(std::move(id->runs));
      id->retired_services.push_back(std::move(id->service));
      if (absl::Status s = Serve(*id); !s.ok()) return s;
    }
  }
  absl::Status s = StartSession(*id);
  if (!s.ok()) {
    if (IsAuthRefusal(s)) limiter_.RecordFailure(peer_ip);
    metrics_.RegistrationRefused(IsAuthRefusal(s) ? "token" : "registry");
    id->record.set_live(false);
    id->record.clear_token();
    Persist(*id);
    spdlog::warn("registration of {} {} refused: {}", param.registry_key(), url->base,
                 s.ToString());
    return absl::Status(s.code(),
                        absl::StrCat("jobwheel registry refused the registration: ", s.message()));
  }
  id->record.set_live(true);
  Persist(*id);
  metrics_.identities_live().Increment();
  spdlog::info("XXL executor {} of app {} is jobwheel executor {}", url->base, param.registry_key(),
               id->info.address);
  return absl::OkStatus();
}

absl::Status Gateway::Remove(const RegistryParam& param, const std::string& token,
                             const std::string& peer_ip) {
  if (absl::Status s = CheckCaller(token, peer_ip); !s.ok()) return s;
  auto url = ParseExecutorUrl(param.registry_value());
  if (!url.ok()) return url.status();
  Identity* id = nullptr;
  {
    absl::MutexLock lock(&mu_);
    auto it = identities_.find(IdentityKey(param.registry_key(), url->base));
    if (it == identities_.end()) return absl::OkStatus();
    id = it->second.get();
  }
  absl::MutexLock op(&id->op_mu);
  if (id->record.token().empty() ||
      !ConstantTimeEquals(Sha256Hex(id->record.token()), Sha256Hex(token)) ||
      !ResolvesTo(url->host, peer_ip)) {
    limiter_.RecordFailure(peer_ip);
    metrics_.auth_failures().Increment();
    return absl::PermissionDeniedError("registryRemove: not this executor's token or address");
  }
  TakeOffline(*id, "registryRemove: the XXL executor stopped");
  return absl::OkStatus();
}

void Gateway::TakeOffline(Identity& id, const std::string& why) {
  if (id.session != nullptr) {
    id.session->Shutdown(why);
    id.session.reset();
    metrics_.identities_live().Decrement();
  }
  id.alive = false;
  id.record.set_live(false);
  Persist(id);
  spdlog::info("{} {} offline: {}", id.record.app(), id.record.url(), why);
}

absl::Status Gateway::Callback(const std::vector<HandleCallbackParam>& items,
                               const std::string& token, const std::string& peer_ip) {
  if (absl::Status s = CheckCaller(token, peer_ip); !s.ok()) return s;
  const std::string token_hash = Sha256Hex(token);
  absl::Status all = absl::OkStatus();
  // The items of each identity, in their order, handed over (and reported) together.
  std::vector<std::pair<IdentityRuns*, std::vector<HandleCallbackParam>>> batches;
  absl::flat_hash_map<std::string, size_t> batch_of;        // Identity key → index in batches.
  absl::flat_hash_map<std::string, IdentityRuns*> checked;  // Passed the token/host check.
  for (const HandleCallbackParam& item : items) {
    std::optional<RunRecord> run = ledger_.Get(item.log_id());
    if (!run.has_value()) {
      metrics_.CallbackRefused("unknown_run");
      spdlog::warn("callback for unknown logId {} from {} dropped", item.log_id(), peer_ip);
      continue;
    }
    auto known = checked.find(run->identity());
    IdentityRuns* runs = known != checked.end() ? known->second : nullptr;
    if (runs == nullptr) {
      Identity* id = nullptr;
      {
        absl::MutexLock lock(&mu_);
        auto it = identities_.find(run->identity());
        if (it != identities_.end()) id = it->second.get();
      }
      std::string id_token, id_url;
      if (id != nullptr) {
        absl::MutexLock op(&id->op_mu);
        id_token = id->record.token();
        id_url = id->record.url();
        runs = id->runs.get();
      }
      auto url = ParseExecutorUrl(id_url);
      if (runs == nullptr || id_token.empty() ||
          !ConstantTimeEquals(Sha256Hex(id_token), token_hash) || !url.ok() ||
          !ResolvesTo(url->host, peer_ip)) {
        limiter_.RecordFailure(peer_ip);
        metrics_.CallbackRefused("not_sent_here");
        all = absl::PermissionDeniedError(
            absl::StrCat("logId ", item.log_id(), ": not a run sent to this executor"));
        continue;
      }
      checked[run->identity()] = runs;
    }
    auto [slot, fresh] = batch_of.try_emplace(run->identity(), batches.size());
    if (fresh) batches.emplace_back(runs, std::vector<HandleCallbackParam>{});
    batches[slot->second].second.push_back(item);
  }
  for (auto& [runs, batch] : batches) {
    int refused = 0;
    absl::Status s = runs->OnCallbacks(batch, &refused);
    for (int i = 0; i < refused; ++i) {
      limiter_.RecordFailure(peer_ip);
      metrics_.CallbackRefused("not_sent_here");
    }
    if (!s.ok() && (all.ok() || absl::IsPermissionDenied(s))) all = s;
  }
  return all;
}

void Gateway::Probe(Identity& id) {
  auto body = xxl_.Post(id.info.url, "/beat", "", id.info.token, options_.probe_timeout);
  bool ok = false;
  if (body.ok()) {
    auto reply = ParseReply(*body);
    ok = reply.ok() && reply->code == 200;
  }
  metrics_.XxlCall("beat", ok ? "ok" : "error");
  const int64_t now = absl::ToUnixMillis(clock_.Now());
  absl::MutexLock op(&id.op_mu);
  if (ok) {
    id.last_ok_ms = now;
    id.failed_probes = 0;
    if (id.record.live() && id.session == nullptr && !id.record.token().empty()) {
      // Restored after a restart: register again with the same instance id.
      if (StartSession(id).ok()) {
        metrics_.identities_live().Increment();
        spdlog::info("{} {} registered again as {}", id.record.app(), id.record.url(),
                     id.info.address);
      }
    }
    if (id.session != nullptr) id.alive = true;
    return;
  }
  if (id.last_ok_ms == 0) id.last_ok_ms = now;  // Restored: count from now.
  // Offline after offline_after / probe_interval failures in a row (2 by default), so a
  // kill -9 is seen within about offline_after.
  const int64_t allowed = std::max<int64_t>(
      1, absl::ToInt64Milliseconds(options_.offline_after) /
             std::max<int64_t>(1, absl::ToInt64Milliseconds(options_.probe_interval)));
  if (id.record.live() && ++id.failed_probes >= allowed) {
    metrics_.probe_offline().Increment();
    id.runs->Abandon("the XXL executor stopped answering /beat");
    TakeOffline(id, absl::StrCat("no answer to /beat for ", now - id.last_ok_ms, " ms"));
  }
}

void Gateway::ProbeLoop() {
  absl::Time next_probe = clock_.Now();
  absl::Time next_prune = clock_.Now() + absl::Minutes(1);
  while (true) {
    std::vector<Identity*> all;
    {
      absl::MutexLock lock(&mu_);
      clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping_),
                               clock_.Now() + absl::Milliseconds(200));
      if (stopping_) return;
      for (auto& [key, id] : identities_) all.push_back(id.get());
    }
    const absl::Time now = clock_.Now();
    const bool probe = now >= next_probe;
    if (probe) next_probe = now + options_.probe_interval;
    for (Identity* id : all) {
      // A registration in progress holds op_mu for a while: this identity waits a round.
      if (!id->op_mu.TryLock()) continue;
      IdentityRuns* runs = id->runs.get();
      id->op_mu.Unlock();
      if (runs == nullptr) continue;
      if (probe && !id->probing.exchange(true)) {
        const bool queued = probe_pool_.Submit([this, id] {
          {
            absl::MutexLock op(&id->op_mu);
            if (!id->record.live()) {
              id->probing = false;
              return;
            }
          }
          Probe(*id);
          id->probing = false;
        });
        if (!queued) id->probing = false;
      }
      if (!id->ticking.exchange(true)) {
        // Off this thread: a report to a slow dispatcher must not hold up the probes.
        if (!pool_.Submit([id, runs] {
              runs->Tick();
              id->ticking = false;
            })) {
          id->ticking = false;
        }
      }
    }
    if (now >= next_prune) {
      next_prune = now + absl::Minutes(1);
      ledger_.Prune(now - options_.retention);
    }
  }
}

}  // namespace jobwheel::xxl
