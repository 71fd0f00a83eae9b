#ifndef JOBWHEEL_COMMON_SERVER_READINESS_H_
#define JOBWHEEL_COMMON_SERVER_READINESS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "grpcpp/health_check_service_interface.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace jobwheel {

// Condition names shared by the services.
inline constexpr char kDatabaseCondition[] = "database";
inline constexpr char kRegistrySnapshotCondition[] = "registry_snapshot";
// A health service name that answers SERVING as long as the gRPC server runs (draining
// included): what a liveness probe asks, so a database outage never restarts a process.
inline constexpr char kLivenessService[] = "liveness";

// The readiness flags every server takes, checked by Validate().
struct ReadinessOptions {
  // --db_check_interval: how often the database condition runs SELECT 1.
  absl::Duration db_check_interval = absl::Seconds(5);
  // --db_check_timeout: a check without an answer after this long makes it not ready.
  absl::Duration db_check_timeout = absl::Seconds(2);
  // --drain_delay: on SIGTERM, how long the server keeps serving NOT_SERVING before it shuts
  // down, so load balancers and probes see it leave first.
  absl::Duration drain_delay = absl::ZeroDuration();

  // INVALID_ARGUMENT naming the flag of the first bad value.
  absl::Status Validate() const;
};

// Whether a server is ready: a set of named conditions, each reported ready or not by the
// component that knows (the database through a periodic check, the dispatcher's registry
// snapshot through its directory), and draining, which once set makes it not ready for good.
// It drives the gRPC health service: the overall service ("") and each of the process's
// service names answer SERVING exactly when every condition is ready and it is not draining.
// Logs every transition; with a metrics registry, exports <prefix>_ready{condition} (1 ready,
// 0 not) and <prefix>_serving. Thread-safe.
class Readiness {
 public:
  // A check of a condition, e.g. SELECT 1; OK means ready. It may block: the periodic check
  // times it out on the clock.
  using Check = std::function<absl::Status()>;

  // `metrics` (optional, must outlive this) gets the gauges named after `metric_prefix`, e.g.
  // "jobwheel_dispatcher".
  explicit Readiness(Clock& clock, prometheus::Registry* metrics = nullptr,
                     const std::string& metric_prefix = "jobwheel");
  ~Readiness();
  Readiness(const Readiness&) = delete;
  Readiness& operator=(const Readiness&) = delete;

  // Declares a condition, not ready until Set (or its check) says otherwise. Idempotent.
  void AddCondition(const std::string& name);
  // Reports a condition (declaring it if needed); `reason` says why it is not ready.
  void Set(absl::string_view name, bool ready, absl::string_view reason = "");

  // Declares `name` and runs `check` now and then every `interval` on its own thread (from
  // Start() on); a check that fails, or has not answered after `timeout`, makes `name` not
  // ready until one succeeds in time. A check still running when the next is due is not
  // started twice.
  void AddPeriodicCheck(const std::string& name, Check check, absl::Duration interval,
                        absl::Duration timeout);

  // Starts the periodic checks.
  void Start();

  // From now on the health service's "" and `service_names` follow this state, and
  // kLivenessService answers SERVING. `health` is the server's (grpc::Server::
  // GetHealthCheckService()); not owned, must outlive this or Shutdown().
  void Attach(grpc::HealthCheckServiceInterface* health, std::vector<std::string> service_names);

  // Not ready from now on, whatever the conditions say.
  void Drain(absl::string_view reason);

  bool draining() const;
  // Every condition ready and not draining.
  bool ready() const;
  // OK when ready(); else UNAVAILABLE saying why ("draining: ...", "database: ...").
  absl::Status ReadyStatus() const;

  // Stops and joins the periodic checks (waiting for a check in progress). Idempotent.
  void Shutdown();

 private:
  struct Condition {
    bool ready = false;
    std::string reason = "not reported yet";
    prometheus::Gauge* gauge = nullptr;
  };
  struct Periodic {
    std::string name;
    Check check;
    absl::Duration interval;
    absl::Duration timeout;
    // Guarded by mu_: checks requested and finished (one runs while requested > finished),
    // the last result.
    uint64_t requested = 0;
    uint64_t finished = 0;
    absl::Status result;
    std::thread loop;
    std::thread worker;
  };

  Condition& ConditionLocked(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetLocked(const std::string& name, bool ready, absl::string_view reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReadyStatusLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ReadyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pushes the state to the health service and gauges and logs a change of the overall state.
  void PublishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop(Periodic* p);
  void Worker(Periodic* p);

  Clock& clock_;
  prometheus::Family<prometheus::Gauge>* ready_family_ = nullptr;
  prometheus::Gauge* serving_gauge_ = nullptr;

  mutable absl::Mutex mu_;
  std::map<std::string, Condition> conditions_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Periodic>> periodic_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::string drain_reason_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool published_ready_ ABSL_GUARDED_BY(mu_) = true;  // No condition yet: ready.
  grpc::HealthCheckServiceInterface* health_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<std::string> service_names_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_SERVER_READINESS_H_
