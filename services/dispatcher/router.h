#ifndef JOBWHEEL_SERVICES_DISPATCHER_ROUTER_H_
#define JOBWHEEL_SERVICES_DISPATCHER_ROUTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/random/bit_gen_ref.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/v1/types.pb.h"
#include "services/dispatcher/consistent_hash.h"
#include "services/dispatcher/executor_clients.h"

namespace jobwheel::dispatcher {

// One executor chosen for a run, with its shard.
struct RouteTarget {
  std::string address;
  int32_t shard_index = 0;
  int32_t shard_total = 1;
};

// The routing decision: targets (empty when routing failed) and the decision in plain words.
struct RouteDecision {
  bool ok() const { return !targets.empty(); }
  std::vector<RouteTarget> targets;
  std::string message;
};

// Lower-case strategy name without the enum prefix ("round"), for messages and metric labels.
std::string StrategyName(v1::RoutingStrategy strategy);

// Picks executors for a job with XXL-JOB's routing strategies. `addresses` must be the
// candidates (live executors of the app able to run the job) sorted ascending.
//
// Stateful strategies (ROUND, LEAST_FREQUENTLY_USED, LEAST_RECENTLY_USED) keep per-job state in
// memory, reset daily as XXL-JOB does; randomness (ROUND start, RANDOM, LFU initial counts)
// comes from the injected generator, time from the injected clock. FAILOVER and BUSYOVER call
// executors through `probes` (outside the lock). Thread-safe.
class Router {
 public:
  struct Options {
    absl::Duration probe_deadline = absl::Milliseconds(500);
    // FAILOVER skips an executor whose Beat failed this recently without calling it again, so
    // a batch of fires does not wait for the same dead executor once per fire.
    absl::Duration probe_failure_ttl = absl::Seconds(2);
    absl::Duration state_ttl = absl::Hours(24);
  };

  Router(Clock& clock, absl::BitGenRef gen, ExecutorClients& probes, Options options);
  Router(Clock& clock, absl::BitGenRef gen, ExecutorClients& probes)
      : Router(clock, gen, probes, Options()) {}

  // Routes one fire of job `job_id`. A manual shard (shard_total > 0) yields one run with that
  // shard; for SHARDING_BROADCAST it goes to the shard_index-th address (or the first when the
  // set shrank), as XXL-JOB's retry of a broadcast shard does.
  // `app` is the job's app (the probes of FAILOVER and BUSYOVER carry a token for it).
  RouteDecision Route(int64_t job_id, absl::string_view app, v1::RoutingStrategy strategy,
                      const std::vector<std::string>& addresses, int32_t manual_shard_index = 0,
                      int32_t manual_shard_total = 0);

 private:
  void MaybeResetLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  size_t RoundLocked(int64_t job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string LfuLocked(int64_t job_id, const std::vector<std::string>& addresses)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string LruLocked(int64_t job_id, const std::vector<std::string>& addresses)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  RouteDecision Failover(absl::string_view app, const std::vector<std::string>& addresses);
  RouteDecision Busyover(int64_t job_id, absl::string_view app,
                         const std::vector<std::string>& addresses);

  Clock& clock_;
  ExecutorClients& probes_;
  const Options options_;

  absl::Mutex mu_;
  absl::BitGenRef gen_ ABSL_GUARDED_BY(mu_);
  absl::Time state_valid_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::flat_hash_map<int64_t, int64_t> round_counts_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, std::map<std::string, int64_t>> lfu_counts_ ABSL_GUARDED_BY(mu_);
  // Per job: address → access sequence number (LinkedHashMap in access order, as in XXL-JOB).
  absl::flat_hash_map<int64_t, std::map<std::string, uint64_t>> lru_seq_ ABSL_GUARDED_BY(mu_);
  uint64_t lru_clock_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, absl::Time> beat_failed_at_ ABSL_GUARDED_BY(mu_);
  ConsistentHashRings rings_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_ROUTER_H_
