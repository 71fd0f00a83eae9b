#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_GATEWAY_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_GATEWAY_H_

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/auth/failed_auth_limiter.h"
#include "common/base/work_pool.h"
#include "common/grpc/grpc_server.h"
#include "common/time/clock.h"
#include "jobwheel/xxl/xxl_wire.pb.h"
#include "services/xxl_gateway/gateway_metrics.h"
#include "services/xxl_gateway/identity_executor_service.h"
#include "services/xxl_gateway/identity_runs.h"
#include "services/xxl_gateway/registry_session.h"
#include "services/xxl_gateway/result_sink.h"
#include "services/xxl_gateway/run_ledger.h"
#include "services/xxl_gateway/state_dir.h"
#include "services/xxl_gateway/xxl_client.h"

namespace jobwheel::xxl {

struct GatewayOptions {
  std::string advertise_host = "127.0.0.1";
  std::string bind_host = "127.0.0.1";  // Where the identities' ports listen.
  int port_from = 0;
  int port_to = 0;
  std::vector<std::string> registry_targets;
  std::set<std::string> script_apps;
  // Handler names advertised for an app (the dispatcher routes a job only to executors that
  // list its handler); "*" is always added.
  std::map<std::string, std::vector<std::string>> app_handlers;
  bool insecure_dev = false;
  std::map<std::string, std::string> caller_public_keys;  // Issuer → PEM.
  ServerTls server_tls;
  IdentityRunsOptions runs;
  absl::Duration probe_interval = absl::Seconds(1);
  absl::Duration offline_after = absl::Seconds(2);
  absl::Duration probe_timeout = absl::Milliseconds(800);
  absl::Duration register_wait = absl::Seconds(5);
  absl::Duration retention = absl::Hours(24);
  int capacity = 16;
  std::string version = "0.1";
};

// The XXL admin side's logic and the identities: each live XXL executor (app + registryValue)
// is a jobwheel executor with its own gRPC port, registry session and IdentityRuns. Validates
// and authenticates what XXL executors send (token = a jobwheel EXECUTOR token, decided by the
// registry; callbacks only from the executor a run was sent to), probes each executor's /beat
// and takes it offline when it stops answering. No HTTP types here. Thread-safe.
class Gateway {
 public:
  Gateway(GatewayOptions options, StateDir& state, XxlClient& xxl, ResultSink& results,
          RegistryStubFactory registry_stubs, GatewayMetrics& metrics, Clock& clock);
  ~Gateway();

  // Loads the state dir, serves the known identities' ports again and starts the prober.
  absl::Status Start();
  // Goodbye on every registry session, stops the servers and threads. Idempotent.
  void Shutdown();

  // /api/registry, /api/registryRemove, /api/callback. `token` is XXL-JOB-ACCESS-TOKEN (empty
  // when missing); `peer_ip` the client's IP. OK → code 200; an error → code 500 with its
  // message.
  absl::Status Register(const RegistryParam& param, const std::string& token,
                        const std::string& peer_ip);
  absl::Status Remove(const RegistryParam& param, const std::string& token,
                      const std::string& peer_ip);
  absl::Status Callback(const std::vector<HandleCallbackParam>& items, const std::string& token,
                        const std::string& peer_ip);

  // Identities registered now (tests, metrics).
  int live_identities() const;
  // The port of an identity (tests); 0 when unknown.
  int PortOf(const std::string& app, const std::string& url_base) const;

 private:
  struct Identity;
  absl::Status CheckCaller(const std::string& token, const std::string& peer_ip);
  absl::StatusOr<Identity*> Ensure(const std::string& app, const std::string& base,
                                   const std::string& token);
  absl::Status Serve(Identity& id);
  absl::Status StartSession(Identity& id);
  void TakeOffline(Identity& id, const std::string& why);
  void Persist(Identity& id);
  void ProbeLoop();
  void Probe(Identity& id);
  int FreePort() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const GatewayOptions options_;
  StateDir& state_;
  RunLedger ledger_;
  XxlClient& xxl_;
  ResultSink& results_;
  const RegistryStubFactory registry_stubs_;
  GatewayMetrics& metrics_;
  Clock& clock_;
  FailedAuthLimiter limiter_;
  WorkPool pool_;        // ExecutorService calls and the sending of queued runs.
  WorkPool probe_pool_;  // /beat probes.

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Identity>> identities_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::set<int> unusable_ports_ ABSL_GUARDED_BY(mu_);  // Could not be bound.

  std::thread prober_;
};

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_GATEWAY_H_
