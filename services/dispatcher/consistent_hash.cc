#include "services/dispatcher/consistent_hash.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace jobwheel::dispatcher {

uint64_t StableHash64(absl::string_view data) {
  uint64_t h = 14695981039346656037ULL;  // FNV-1a 64 offset basis.
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  // fmix64: spreads FNV's weak low-order differences over all bits.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

ConsistentHashRing::ConsistentHashRing(const std::vector<std::string>& addresses)
    : addresses_(addresses) {
  points_.reserve(addresses_.size() * kVirtualNodes);
  for (uint32_t a = 0; a < addresses_.size(); ++a) {
    for (int i = 0; i < kVirtualNodes; ++i) {
      points_.emplace_back(StableHash64(absl::StrCat("SHARD-", addresses_[a], "-NODE-", i)), a);
    }
  }
  std::sort(points_.begin(), points_.end());
}

const std::string& ConsistentHashRing::Pick(uint64_t key_hash) const {
  auto it = std::lower_bound(points_.begin(), points_.end(), std::make_pair(key_hash, uint32_t{0}));
  if (it == points_.end()) it = points_.begin();
  return addresses_[it->second];
}

std::string ConsistentHashRings::Pick(int64_t job_id, const std::vector<std::string>& addresses) {
  const std::string key = absl::StrJoin(addresses, ",");
  std::shared_ptr<const ConsistentHashRing> ring;
  {
    absl::MutexLock lock(&mu_);
    auto it = rings_.find(key);
    if (it != rings_.end()) ring = it->second;
  }
  if (ring == nullptr) {
    ring = std::make_shared<const ConsistentHashRing>(addresses);
    absl::MutexLock lock(&mu_);
    if (rings_.size() >= kMaxRings) rings_.clear();
    rings_.emplace(key, ring);
  }
  return ring->Pick(StableHash64(absl::StrCat("JOB-", job_id)));
}

}  // namespace jobwheel::dispatcher
