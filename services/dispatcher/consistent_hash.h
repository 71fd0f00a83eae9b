#ifndef JOBWHEEL_SERVICES_DISPATCHER_CONSISTENT_HASH_H_
#define JOBWHEEL_SERVICES_DISPATCHER_CONSISTENT_HASH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace jobwheel::dispatcher {

// A stable 64-bit hash (FNV-1a followed by MurmurHash3's fmix64 finalizer): the same on every
// dispatcher replica and across restarts, unlike absl::Hash.
uint64_t StableHash64(absl::string_view data);

// A hash ring with `kVirtualNodes` points per address ("SHARD-<address>-NODE-<i>", as
// XXL-JOB's ExecutorRouteConsistentHash names them). Immutable, thread-compatible.
class ConsistentHashRing {
 public:
  static constexpr int kVirtualNodes = 100;
  explicit ConsistentHashRing(const std::vector<std::string>& addresses);
  // The address owning `key`: the first ring point at or after its hash, wrapping around.
  const std::string& Pick(uint64_t key_hash) const;
  bool empty() const { return points_.empty(); }

 private:
  std::vector<std::string> addresses_;
  std::vector<std::pair<uint64_t, uint32_t>> points_;  // (hash, index in addresses_), sorted.
};

// Rings cached by address set, since the set changes rarely. Thread-safe.
class ConsistentHashRings {
 public:
  // The address for job `job_id` among `addresses` (non-empty).
  std::string Pick(int64_t job_id, const std::vector<std::string>& addresses);

 private:
  static constexpr size_t kMaxRings = 256;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const ConsistentHashRing>> rings_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_CONSISTENT_HASH_H_
