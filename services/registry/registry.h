#ifndef JOBWHEEL_SERVICES_REGISTRY_REGISTRY_H_
#define JOBWHEEL_SERVICES_REGISTRY_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/v1/registry.pb.h"
#include "services/registry/executor_store.h"
#include "services/registry/registry_metrics.h"
#include "services/registry/session_credential.h"

namespace jobwheel::registry {

struct RegistryOptions {
  std::string replica_id;
  absl::Duration beat_interval = absl::Seconds(1);
  // A session with no beat for this long is taken offline and its stream
  // closed.
  absl::Duration beat_deadline = absl::Seconds(3);
  // How long a row stays online without renewal (covers a dead replica).
  absl::Duration lease = absl::Seconds(10);
  // How often this replica renews its sessions' leases: min(1 s, lease / 3)
  // when zero.
  absl::Duration renew_interval = absl::ZeroDuration();
  // How often this replica expires the leases of dead replicas.
  absl::Duration expire_interval = absl::Seconds(1);
  // How often the background thread checks deadlines (Start()).
  absl::Duration tick_interval = absl::Milliseconds(100);
  // A stream that has not registered this long after it opened is closed DEADLINE_EXCEEDED.
  absl::Duration register_deadline = absl::Seconds(5);
  // How often the credentials of registered streams are checked again (a revoked token's
  // stream closes within this plus the authenticator's cache time).
  absl::Duration recheck_interval = absl::Seconds(2);
  // Registrations one executor token, and one peer host, may hold on this replica at once
  // (0: no cap): one stolen token or one host cannot fill the registry with addresses.
  int max_registrations_per_token = 64;
  int max_registrations_per_peer = 256;

  absl::Status Validate() const;
  absl::Duration EffectiveRenewInterval() const;
};

// What the registry says to one heartbeat stream; implemented by the stream's
// reactor. Called with the registry's lock held: implementations must only
// queue work and must not call back into the Registry synchronously.
// Who holds a registration, for the per-token and per-peer caps (empty: not counted).
struct RegistrationOrigin {
  std::string token;  // The executor token's identity (never the secret).
  std::string peer;   // The caller's host.
};

class SessionSink {
 public:
  virtual ~SessionSink() = default;
  virtual void SendInstruction(v1::InstructionKind kind, const std::string& reason) = 0;
  // The registry has given up on this session (missed-beat deadline,
  // superseded, shutdown): end the stream with `status`, then call
  // CloseSession.
  virtual void Close(const absl::Status& status) = 0;
};

// Executor liveness on this replica: the heartbeat sessions, their beat
// deadlines and the leases of their rows in the store. Methods that write to
// the store block on it (callers keep them off gRPC reactor threads); Beat and
// OpenSession never touch the store. Thread-safe. Start() runs Tick()
// periodically; Shutdown() (idempotent, joining) stops it.
class Registry {
 public:
  Registry(RegistryOptions options, ExecutorStore& store, Clock& clock, RegistryMetrics& metrics);
  ~Registry();

  // A new stream. The returned id names it in the other calls.
  int64_t OpenSession(SessionSink* sink);
  // Registers (first message) or re-registers (after REREGISTER) the executor
  // of a session. INVALID_ARGUMENT for bad input, UNAVAILABLE while draining or
  // when the store fails. No takeover: ALREADY_EXISTS naming register.address when the app
  // and address are online for another executor process (another instance_id), through this
  // replica or any other (the address is free once that instance's stream has closed, missed
  // its beat deadline, or its lease ran out), or while another stream of this replica is
  // registering them. The same instance registering again (a reconnect, through any replica)
  // is accepted and supersedes its older session. `credential` (nullable) is checked again
  // every recheck_interval while the session is online.
  // RESOURCE_EXHAUSTED when `origin`'s token or peer already holds its cap of registrations
  // here; ALREADY_EXISTS naming register.address when the address is online for another app.
  absl::StatusOr<v1::HeartbeatRegistered> Register(
      int64_t session, const v1::ExecutorRegistration& reg,
      std::shared_ptr<SessionCredential> credential = nullptr, RegistrationOrigin origin = {});
  // Records a beat; returns the seq to acknowledge. FAILED_PRECONDITION before
  // Register.
  absl::StatusOr<int64_t> Beat(int64_t session, const v1::ExecutorBeat& beat);
  // Graceful deregistration: the row is offline (committed, announced) when
  // this returns OK.
  absl::Status Goodbye(int64_t session, const std::string& reason);
  // The stream ended: forgets the session (the sink is not called after this
  // returns) and takes its executor offline if it still was online.
  void CloseSession(int64_t session);

  // Deadlines (beats, registration), credential re-checks, then lease renewal and expiry
  // when they are due.
  void Tick();
  // Tells every session to move to another replica; new registrations are
  // refused. Sessions that end from now on keep their rows until
  // TakeAllOffline, so an executor moving to another replica never shows as
  // offline.
  void Drain(const std::string& reason);
  // Shutdown: takes every online (or drained, not yet re-registered) session of
  // this replica offline and closes its stream.
  void TakeAllOffline();

  int open_sessions() const;
  // While draining: how many executors whose streams to this replica ended still have their
  // row held by this replica (not yet registered through another one). Their move is in
  // flight: TakeAllOffline before it lands would show them offline for a moment.
  int drained_still_here();

  void Start();
  void Shutdown();

 private:
  enum class State { kNew, kRegistering, kOnline, kOffline };
  struct Session {
    SessionSink* sink = nullptr;
    State state = State::kNew;
    SessionRef ref;
    v1::ExecutorRegistration registration;
    absl::Time last_beat;
    int32_t running = 0;
    int32_t queued = 0;
    absl::Time opened;
    ExecutorKey pending;  // While kRegistering: the key being registered.
    std::shared_ptr<SessionCredential> credential;
    RegistrationOrigin origin;
    bool closing = false;  // Told to close by the registry (deadline, credential).
  };

  // OK when no other session of this replica holds `key` for another executor process, nor
  // the address for another app, and the caller's token and peer are under their caps.
  absl::Status CheckHoldersLocked(int64_t session, const v1::ExecutorRegistration& reg,
                                  const ExecutorKey& key, const RegistrationOrigin& origin)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckDeadlines(absl::Time now);
  void RecheckCredentials();
  void RenewLeases();
  void ExpireLeases();
  void Loop();

  const RegistryOptions options_;
  ExecutorStore& store_;
  Clock& clock_;
  RegistryMetrics& metrics_;
  const int64_t incarnation_;

  mutable absl::Mutex mu_;
  std::map<int64_t, Session> sessions_ ABSL_GUARDED_BY(mu_);
  int64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t next_session_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  // Sessions that ended while draining; taken offline by TakeAllOffline.
  std::vector<SessionRef> drained_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time next_renew_ ABSL_GUARDED_BY(mu_);
  absl::Time next_expire_ ABSL_GUARDED_BY(mu_);
  absl::Time next_recheck_ ABSL_GUARDED_BY(mu_);
  // When a lease renewal or expiry last failed (database unreachable). After an outage every
  // lease in the table looks expired; the replicas that own them need a lease period to renew
  // them before anyone may expire leases again.
  absl::Time last_db_failure_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::thread thread_;
};

}  // namespace jobwheel::registry

#endif  // JOBWHEEL_SERVICES_REGISTRY_REGISTRY_H_
