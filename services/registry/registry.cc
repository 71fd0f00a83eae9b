#include "services/registry/registry.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"
#include "services/registry/validation.h"
#include "spdlog/spdlog.h"

namespace jobwheel::registry {

absl::Status RegistryOptions::Validate() const {
  if (replica_id.empty()) return absl::InvalidArgumentError("replica_id: must not be empty");
  if (beat_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("beat_interval: must be positive");
  }
  if (beat_deadline <= beat_interval) {
    return absl::InvalidArgumentError(
        absl::StrCat("beat_deadline: must be longer than beat_interval (",
                     absl::FormatDuration(beat_interval), ")"));
  }
  if (lease < absl::Seconds(1)) return absl::InvalidArgumentError("lease: must be at least 1s");
  if (renew_interval < absl::ZeroDuration() || renew_interval * 2 > lease) {
    return absl::InvalidArgumentError("renew_interval: must be at most half the lease");
  }
  if (expire_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("expire_interval: must be positive");
  }
  if (tick_interval <= absl::ZeroDuration() || tick_interval > beat_interval) {
    return absl::InvalidArgumentError("tick_interval: must be positive and at most beat_interval");
  }
  if (max_registrations_per_token < 0) {
    return absl::InvalidArgumentError("max_registrations_per_token: must not be negative");
  }
  if (max_registrations_per_peer < 0) {
    return absl::InvalidArgumentError("max_registrations_per_peer: must not be negative");
  }
  if (register_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("register_deadline: must be positive");
  }
  if (recheck_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("recheck_interval: must be positive");
  }
  return absl::OkStatus();
}

absl::Duration RegistryOptions::EffectiveRenewInterval() const {
  if (renew_interval > absl::ZeroDuration()) return renew_interval;
  return std::min(absl::Seconds(1), lease / 3);
}

Registry::Registry(RegistryOptions options, ExecutorStore& store, Clock& clock,
                   RegistryMetrics& metrics)
    : options_(std::move(options)),
      store_(store),
      clock_(clock),
      metrics_(metrics),
      incarnation_(absl::ToUnixMicros(clock.Now())) {
  next_renew_ = clock_.Now() + options_.EffectiveRenewInterval();
  next_expire_ = clock_.Now() + options_.expire_interval;
  next_recheck_ = clock_.Now() + options_.recheck_interval;
}

Registry::~Registry() { Shutdown(); }

int64_t Registry::OpenSession(SessionSink* sink) {
  absl::MutexLock lock(&mu_);
  const int64_t id = next_session_++;
  sessions_[id].sink = sink;
  sessions_[id].opened = clock_.Now();
  metrics_.sessions_open.Increment();
  return id;
}

namespace {

// The executor row a registration asks for.
v1::Executor ExecutorOf(const v1::ExecutorRegistration& reg) {
  v1::Executor executor;
  executor.set_app(reg.app());
  executor.set_address(reg.address());
  *executor.mutable_handlers() = reg.handlers();
  executor.set_sdk_version(reg.sdk_version());
  executor.set_capacity(reg.capacity());
  *executor.mutable_labels() = reg.labels();
  executor.set_allow_scripts(reg.allow_scripts());
  return executor;
}

// The store's refusal of a registration as the executor is told it (a rejection), or OK when
// the store failed otherwise (a database error, reported as it is).
absl::Status RefusedByStore(const absl::Status& stored, const v1::ExecutorRegistration& reg,
                            absl::Duration lease) {
  if (absl::StartsWith(stored.message(), "register.")) {
    // Refused by a rule the store states in full (unknown app, address of another app).
    return stored;
  }
  if (stored.code() == absl::StatusCode::kAlreadyExists) {
    return absl::AlreadyExistsError(absl::StrCat(
        "register.address: ", stored.message(),
        "; it is free once that instance's stream closes (on whichever replica), or at the "
        "latest when its lease of ",
        absl::FormatDuration(lease), " runs out"));
  }
  return absl::OkStatus();
}

}  // namespace

// Whether `key` may be registered for `session` as far as this replica's other sessions go.
absl::Status Registry::CheckHoldersLocked(int64_t session, const v1::ExecutorRegistration& reg,
                                          const ExecutorKey& key,
                                          const RegistrationOrigin& origin) {
  // No takeover: another live stream of this replica holding the same executor for another
  // executor process (instance_id) keeps it, and so does one still registering it. Its
  // executor restarting closes that stream first (then it is free at once); a silent one is
  // taken offline at its beat deadline. The same process reconnecting (its old stream
  // half-open) may register: the old stream is closed once the new one holds the row. The
  // store applies the same rule across replicas.
  int same_token = 0, same_peer = 0;
  for (const auto& [other_id, other] : sessions_) {
    if (other_id == session || other.closing) continue;
    const bool holding = other.state == State::kOnline || other.state == State::kRegistering;
    const ExecutorKey& other_key = other.state == State::kOnline ? other.ref.key : other.pending;
    // A reconnect of the same executor supersedes its old session: not a second holding.
    if (holding && !(other_key == key)) {
      if (!origin.token.empty() && other.origin.token == origin.token) ++same_token;
      if (!origin.peer.empty() && other.origin.peer == origin.peer) ++same_peer;
    }
    if (holding && other_key.address == key.address && other_key.app != key.app) {
      return absl::AlreadyExistsError(absl::StrCat("register.address: ", reg.address(),
                                                   " is online for another app (", other_key.app,
                                                   "); an address serves one app at a time"));
    }
    const bool other_instance_online = other.state == State::kOnline && other.ref.key == key &&
                                       other.registration.instance_id() != reg.instance_id();
    const bool registering = other.state == State::kRegistering && other.pending == key;
    if (other_instance_online || registering) {
      return absl::AlreadyExistsError(absl::StrCat(
          "register.address: executor ", reg.app(), "/", reg.address(), " is online with ",
          registering ? "a registration in progress" : "another instance",
          " on another stream; it is free once that stream closes (or misses its beat "
          "deadline of ",
          absl::FormatDuration(options_.beat_deadline), ")"));
    }
  }
  auto over = [](int held, int cap) { return cap > 0 && held >= cap; };
  if (over(same_token, options_.max_registrations_per_token) ||
      over(same_peer, options_.max_registrations_per_peer)) {
    const bool token = over(same_token, options_.max_registrations_per_token);
    return absl::ResourceExhaustedError(absl::StrCat(
        "register: this ", token ? "executor token" : "peer", " already holds ",
        token ? same_token : same_peer, " registrations on registry replica ", options_.replica_id,
        " (the cap, --max_registrations_per_", token ? "token" : "peer", ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::HeartbeatRegistered> Registry::Register(
    int64_t session, const v1::ExecutorRegistration& reg,
    std::shared_ptr<SessionCredential> credential, RegistrationOrigin origin) {
  absl::Status valid = ValidateRegistration(reg);
  if (!valid.ok()) {
    metrics_.registrations_rejected.Increment();
    return valid;
  }
  SessionRef previous;
  bool had_previous = false;
  SessionRef ref;
  ref.key = {reg.app(), reg.address()};
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return absl::FailedPreconditionError("session is closed");
    if (draining_) {
      return absl::UnavailableError(
          absl::StrCat("registry replica ", options_.replica_id, " is draining"));
    }
    Session& s = it->second;
    if (s.state == State::kRegistering) {
      return absl::FailedPreconditionError("register: a registration is already in progress");
    }
    absl::Status free = CheckHoldersLocked(session, reg, ref.key, origin);
    if (!free.ok()) {
      metrics_.registrations_rejected.Increment();
      return free;
    }
    if (s.state == State::kOnline && !(s.ref.key == ref.key)) {
      previous = s.ref;
      had_previous = true;
    }
    s.state = State::kRegistering;
    s.pending = ref.key;
    s.origin = std::move(origin);
    ref.session_id = absl::StrCat(options_.replica_id, "/", incarnation_, "/", next_session_id_++);
  }
  if (had_previous) {
    auto off = store_.MarkOffline(previous);
    if (!off.ok()) {
      spdlog::warn(
          "executor {}/{}: re-registered as {}/{}, old row not taken "
          "offline: {}",
          previous.key.app, previous.key.address, ref.key.app, ref.key.address,
          off.status().ToString());
    }
  }
  const v1::Executor executor = ExecutorOf(reg);
  auto stored = store_.Register(executor, options_.replica_id, ref.session_id, options_.lease,
                                reg.instance_id());

  bool orphaned = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end() || it->second.state != State::kRegistering) {
      orphaned = true;  // Closed or shut down meanwhile.
    } else if (!stored.ok()) {
      it->second.state = State::kNew;
    } else {
      Session& s = it->second;
      s.state = State::kOnline;
      s.ref = ref;
      s.registration = reg;
      s.last_beat = clock_.Now();
      s.running = 0;
      s.queued = 0;
      s.credential = std::move(credential);
      // This session holds the row now: an older stream of this replica for the same executor
      // (the same instance reconnecting while its old stream was half-open) is stale.
      for (auto& [other_id, other] : sessions_) {
        if (other_id == session || other.state != State::kOnline || !(other.ref.key == ref.key)) {
          continue;
        }
        other.state = State::kOffline;
        other.closing = true;
        if (other.sink != nullptr) {
          other.sink->Close(absl::AbortedError(absl::StrCat(
              "executor ", ref.key.app, "/", ref.key.address, ": superseded by a newer session")));
        }
      }
    }
  }
  if (!stored.ok()) {
    absl::Status refused = RefusedByStore(stored.status(), reg, options_.lease);
    if (!refused.ok()) {
      metrics_.registrations_rejected.Increment();
      return refused;
    }
    return absl::Status(
        stored.status().code(),
        absl::StrCat("register ", reg.app(), "/", reg.address(), ": ", stored.status().message()));
  }
  if (orphaned) {
    (void)store_.MarkOffline(ref);
    return absl::UnavailableError("session closed during registration");
  }
  metrics_.registrations_accepted.Increment();
  spdlog::info("executor {}/{} registered (session {})", reg.app(), reg.address(), ref.session_id);
  v1::HeartbeatRegistered out;
  out.set_replica_id(options_.replica_id);
  *out.mutable_beat_interval() = ToProtoDuration(options_.beat_interval);
  *out.mutable_beat_deadline() = ToProtoDuration(options_.beat_deadline);
  return out;
}

absl::StatusOr<int64_t> Registry::Beat(int64_t session, const v1::ExecutorBeat& beat) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return absl::FailedPreconditionError("session is closed");
  Session& s = it->second;
  if (s.state == State::kNew) {
    return absl::FailedPreconditionError("beat: the first message must be register");
  }
  s.last_beat = clock_.Now();
  s.running = std::max(0, beat.running());
  s.queued = std::max(0, beat.queued());
  metrics_.beats.Increment();
  return beat.seq();
}

absl::Status Registry::Goodbye(int64_t session, const std::string& reason) {
  SessionRef ref;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return absl::FailedPreconditionError("session is closed");
    if (it->second.state != State::kOnline) return absl::OkStatus();
    it->second.state = State::kOffline;
    ref = it->second.ref;
  }
  auto changed = store_.MarkOffline(ref);
  if (!changed.ok()) {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(session);
    // Let CloseSession try again.
    if (it != sessions_.end() && it->second.state == State::kOffline) {
      it->second.state = State::kOnline;
    }
    return changed.status();
  }
  if (*changed) metrics_.offline_goodbye.Increment();
  spdlog::info("executor {}/{} said goodbye: {}", ref.key.app, ref.key.address, reason);
  return absl::OkStatus();
}

void Registry::CloseSession(int64_t session) {
  SessionRef ref;
  bool online = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    online = it->second.state == State::kOnline;
    ref = it->second.ref;
    sessions_.erase(it);
    metrics_.sessions_open.Decrement();
    if (online && draining_) {
      // Told to move: it is probably registering on another replica right now.
      // Taking the row offline here would flash a REMOVE to every watcher;
      // TakeAllOffline does it later unless the newer session has taken the row
      // over by then.
      drained_.push_back(ref);
      return;
    }
  }
  if (!online) return;
  auto changed = store_.MarkOffline(ref);
  if (!changed.ok()) {
    spdlog::warn(
        "executor {}/{}: stream closed, not marked offline (lease "
        "will expire): {}",
        ref.key.app, ref.key.address, changed.status().ToString());
    return;
  }
  if (*changed) {
    metrics_.offline_stream_closed.Increment();
    spdlog::info("executor {}/{} offline: stream closed", ref.key.app, ref.key.address);
  }
}

void Registry::CheckDeadlines(absl::Time now) {
  std::vector<std::pair<int64_t, SessionRef>> expired;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, s] : sessions_) {
      if (s.state == State::kNew && !s.closing && now - s.opened > options_.register_deadline) {
        s.closing = true;
        metrics_.registrations_rejected.Increment();
        if (s.sink != nullptr) {
          s.sink->Close(absl::DeadlineExceededError(
              absl::StrCat("heartbeat: no valid register within ",
                           absl::FormatDuration(options_.register_deadline))));
        }
        continue;
      }
      if (s.state == State::kOnline && now - s.last_beat > options_.beat_deadline) {
        s.state = State::kOffline;
        expired.push_back({id, s.ref});
      }
    }
  }
  if (expired.empty()) return;
  for (const auto& [id, ref] : expired) {
    auto changed = store_.MarkOffline(ref);
    if (!changed.ok()) {
      spdlog::warn(
          "executor {}/{}: missed beats, not marked offline (lease "
          "will expire): {}",
          ref.key.app, ref.key.address, changed.status().ToString());
    } else if (*changed) {
      metrics_.offline_deadline.Increment();
      spdlog::info("executor {}/{} offline: no beat for {}", ref.key.app, ref.key.address,
                   absl::FormatDuration(options_.beat_deadline));
    }
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [id, ref] : expired) {
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.sink == nullptr) continue;
    it->second.sink->Close(absl::DeadlineExceededError(
        absl::StrCat("executor ", ref.key.app, "/", ref.key.address, ": no beat for ",
                     absl::FormatDuration(options_.beat_deadline))));
  }
}

void Registry::RecheckCredentials() {
  std::vector<std::pair<int64_t, std::shared_ptr<SessionCredential>>> checks;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, s] : sessions_) {
      if (s.state == State::kOnline && !s.closing && s.credential != nullptr) {
        checks.push_back({id, s.credential});
      }
    }
  }
  for (const auto& [id, credential] : checks) {
    const absl::Status s = credential->Check();  // May block: outside the lock.
    if (s.code() != absl::StatusCode::kUnauthenticated &&
        s.code() != absl::StatusCode::kPermissionDenied) {
      if (!s.ok()) spdlog::warn("re-checking a heartbeat credential failed: {}", s.ToString());
      continue;
    }
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.closing || it->second.credential != credential) {
      continue;
    }
    it->second.closing = true;
    spdlog::warn("executor {}/{}: credential no longer valid, closing its stream: {}",
                 it->second.ref.key.app, it->second.ref.key.address, std::string(s.message()));
    // The stream's end takes the executor offline (CloseSession).
    if (it->second.sink != nullptr) it->second.sink->Close(s);
  }
}

void Registry::RenewLeases() {
  std::vector<LeaseRenewal> renewals;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, s] : sessions_) {
      if (s.state != State::kOnline) continue;
      renewals.push_back({s.ref, s.last_beat, s.running, s.queued});
    }
  }
  if (renewals.empty()) return;
  auto lost = store_.RenewLeases(options_.replica_id, renewals, options_.lease);
  if (!lost.ok()) {
    spdlog::warn("renewing {} leases failed: {}", renewals.size(), lost.status().ToString());
    absl::MutexLock lock(&mu_);
    last_db_failure_ = clock_.Now();
    return;
  }
  if (lost->empty()) return;
  absl::MutexLock lock(&mu_);
  for (const LostSession& l : *lost) {
    for (auto& [id, s] : sessions_) {
      if (s.state != State::kOnline || s.ref.session_id != l.session_id) continue;
      s.state = State::kOffline;
      if (s.sink == nullptr) break;
      if (l.reason == LostReason::kSuperseded) {
        spdlog::info("executor {}/{}: session {} superseded", s.ref.key.app, s.ref.key.address,
                     l.session_id);
        s.sink->Close(
            absl::AbortedError(absl::StrCat("executor ", s.ref.key.app, "/", s.ref.key.address,
                                            ": superseded by a newer session")));
      } else {
        spdlog::info(
            "executor {}/{}: row lost (lease expired or database failed over); "
            "asking it to register again",
            s.ref.key.app, s.ref.key.address);
        s.sink->SendInstruction(v1::INSTRUCTION_KIND_REREGISTER,
                                "registration lost in the database; register again");
      }
      break;
    }
  }
}

void Registry::ExpireLeases() {
  {
    absl::MutexLock lock(&mu_);
    if (clock_.Now() - last_db_failure_ < options_.lease) return;  // Owners renew first.
  }
  auto expired = store_.ExpireLeases();
  if (!expired.ok()) {
    spdlog::warn("expiring leases failed: {}", expired.status().ToString());
    absl::MutexLock lock(&mu_);
    last_db_failure_ = clock_.Now();
    return;
  }
  if (*expired > 0) {
    metrics_.offline_lease_expired.Increment(*expired);
    spdlog::info("{} executors offline: lease expired", *expired);
  }
}

void Registry::Tick() {
  const absl::Time now = clock_.Now();
  CheckDeadlines(now);
  bool renew = false, expire = false, recheck = false;
  {
    absl::MutexLock lock(&mu_);
    if (now >= next_recheck_) {
      recheck = true;
      next_recheck_ = now + options_.recheck_interval;
    }
    if (now >= next_renew_) {
      renew = true;
      next_renew_ = now + options_.EffectiveRenewInterval();
    }
    if (now >= next_expire_) {
      expire = true;
      next_expire_ = now + options_.expire_interval;
    }
  }
  if (recheck) RecheckCredentials();
  if (renew) RenewLeases();
  if (expire) ExpireLeases();
}

void Registry::Drain(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  for (auto& [id, s] : sessions_) {
    if (s.sink != nullptr) s.sink->SendInstruction(v1::INSTRUCTION_KIND_DRAIN, reason);
  }
}

void Registry::TakeAllOffline() {
  std::vector<std::pair<int64_t, SessionRef>> online;
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    for (SessionRef& ref : drained_) online.push_back({0, std::move(ref)});
    drained_.clear();
    for (auto& [id, s] : sessions_) {
      if (s.state == State::kOnline) online.push_back({id, s.ref});
      if (s.state == State::kOnline || s.state == State::kRegistering) {
        s.state = State::kOffline;
      }
    }
  }
  for (const auto& [id, ref] : online) {
    auto changed = store_.MarkOffline(ref);
    if (changed.ok() && *changed) metrics_.offline_stream_closed.Increment();
  }
  absl::MutexLock lock(&mu_);
  for (auto& [id, s] : sessions_) {
    if (s.sink != nullptr) {
      s.sink->Close(absl::UnavailableError(
          absl::StrCat("registry replica ", options_.replica_id, " is shutting down")));
    }
  }
}

int Registry::drained_still_here() {
  std::vector<ExecutorKey> keys;
  {
    absl::MutexLock lock(&mu_);
    for (const SessionRef& ref : drained_) keys.push_back(ref.key);
  }
  if (keys.empty()) return 0;
  auto online = store_.GetOnline(keys);
  if (!online.ok()) return 0;  // Nothing to wait for that can be known.
  int here = 0;
  for (const v1::Executor& e : *online) {
    if (e.registry_replica() == options_.replica_id) ++here;
  }
  return here;
}

int Registry::open_sessions() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(sessions_.size());
}

void Registry::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Registry::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Registry::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      const absl::Time next_tick = clock_.Now() + options_.tick_interval;
      if (clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping), next_tick)) return;
    }
    Tick();
  }
}

}  // namespace jobwheel::registry
