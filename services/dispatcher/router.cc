#include "services/dispatcher/router.h"

#include <algorithm>
#include <utility>

#include "absl/random/distributions.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/model/proto_enums.h"

namespace jobwheel::dispatcher {
namespace {

// XXL-JOB re-seeds a counter that grew past this.
constexpr int64_t kCounterLimit = 1000000;

std::string Over(v1::RoutingStrategy strategy, size_t n) {
  return absl::StrCat("route ", absl::AsciiStrToUpper(StrategyName(strategy)), " over ", n,
                      n == 1 ? " executor" : " executors");
}

}  // namespace

std::string StrategyName(v1::RoutingStrategy strategy) {
  if (strategy == v1::ROUTING_STRATEGY_UNSPECIFIED) strategy = v1::ROUTING_STRATEGY_FIRST;
  const std::string& name = v1::RoutingStrategy_Name(strategy);
  if (name.empty()) return absl::StrCat("strategy_", static_cast<int>(strategy));
  return absl::AsciiStrToLower(ShortEnumName(name, "ROUTING_STRATEGY_"));
}

Router::Router(Clock& clock, absl::BitGenRef gen, ExecutorClients& probes, Options options)
    : clock_(clock), probes_(probes), options_(options), gen_(gen) {}

void Router::MaybeResetLocked() {
  const absl::Time now = clock_.Now();
  if (now <= state_valid_until_) return;
  round_counts_.clear();
  lfu_counts_.clear();
  lru_seq_.clear();
  state_valid_until_ = now + options_.state_ttl;
}

size_t Router::RoundLocked(int64_t job_id) {
  auto it = round_counts_.find(job_id);
  if (it == round_counts_.end() || it->second > kCounterLimit) {
    // A random start spreads the first fires of many jobs (XXL-JOB: nextInt(100)).
    const int64_t start = absl::Uniform<int64_t>(gen_, 0, 100);
    round_counts_[job_id] = start;
    return static_cast<size_t>(start);
  }
  return static_cast<size_t>(++it->second);
}

std::string Router::LfuLocked(int64_t job_id, const std::vector<std::string>& addresses) {
  std::map<std::string, int64_t>& counts = lfu_counts_[job_id];
  // Drop executors that left, add new ones with a random small count (XXL-JOB: relieves the
  // first executor at start).
  for (auto it = counts.begin(); it != counts.end();) {
    if (!std::binary_search(addresses.begin(), addresses.end(), it->first)) {
      it = counts.erase(it);
    } else {
      ++it;
    }
  }
  for (const std::string& a : addresses) {
    auto it = counts.find(a);
    if (it == counts.end() || it->second > kCounterLimit) {
      counts[a] = absl::Uniform<int64_t>(gen_, 0, static_cast<int64_t>(addresses.size()));
    }
  }
  auto best = counts.begin();
  for (auto it = counts.begin(); it != counts.end(); ++it) {
    if (it->second < best->second) best = it;  // Ties: address order.
  }
  ++best->second;
  return best->first;
}

std::string Router::LruLocked(int64_t job_id, const std::vector<std::string>& addresses) {
  std::map<std::string, uint64_t>& seq = lru_seq_[job_id];
  for (auto it = seq.begin(); it != seq.end();) {
    if (!std::binary_search(addresses.begin(), addresses.end(), it->first)) {
      it = seq.erase(it);
    } else {
      ++it;
    }
  }
  // New executors join at the "recent" end in address order, as a LinkedHashMap insert does.
  for (const std::string& a : addresses) {
    if (seq.find(a) == seq.end()) seq[a] = ++lru_clock_;
  }
  auto eldest = seq.begin();
  for (auto it = seq.begin(); it != seq.end(); ++it) {
    if (it->second < eldest->second) eldest = it;
  }
  eldest->second = ++lru_clock_;
  return eldest->first;
}

RouteDecision Router::Failover(absl::string_view app, const std::vector<std::string>& addresses) {
  RouteDecision d;
  std::vector<std::string> skipped;
  for (const std::string& a : addresses) {
    {
      absl::MutexLock lock(&mu_);
      auto it = beat_failed_at_.find(a);
      const absl::Time now = clock_.Now();
      if (it != beat_failed_at_.end() && now - it->second < options_.probe_failure_ttl) {
        skipped.push_back(
            absl::StrCat(a, " (beat failed ", absl::FormatDuration(now - it->second), " ago)"));
        continue;
      }
    }
    absl::Status s = probes_.Beat(app, a, options_.probe_deadline);
    {
      absl::MutexLock lock(&mu_);
      if (s.ok()) {
        beat_failed_at_.erase(a);
      } else {
        if (beat_failed_at_.size() > 10000) beat_failed_at_.clear();
        beat_failed_at_[a] = clock_.Now();
      }
    }
    if (s.ok()) {
      d.targets.push_back({a, 0, 1});
      break;
    }
    skipped.push_back(
        absl::StrCat(a, " (beat: ", absl::StatusCodeToString(s.code()), " ", s.message(), ")"));
  }
  d.message = Over(v1::ROUTING_STRATEGY_FAILOVER, addresses.size());
  if (d.ok()) absl::StrAppend(&d.message, " → ", d.targets[0].address);
  if (!skipped.empty()) absl::StrAppend(&d.message, "; skipped ", absl::StrJoin(skipped, ", "));
  if (!d.ok()) absl::StrAppend(&d.message, "; no executor answered Beat");
  return d;
}

RouteDecision Router::Busyover(int64_t job_id, absl::string_view app,
                               const std::vector<std::string>& addresses) {
  RouteDecision d;
  std::vector<std::string> skipped;
  for (const std::string& a : addresses) {
    absl::StatusOr<v1::IdleBeatResponse> r =
        probes_.IdleBeat(app, a, job_id, options_.probe_deadline);
    if (r.ok() && r->idle()) {
      d.targets.push_back({a, 0, 1});
      break;
    }
    if (r.ok()) {
      skipped.push_back(
          absl::StrCat(a, " (busy: running ", r->running(), ", queued ", r->queued(), ")"));
    } else {
      skipped.push_back(absl::StrCat(a,
                                     " (idle beat: ", absl::StatusCodeToString(r.status().code()),
                                     " ", r.status().message(), ")"));
    }
  }
  d.message = Over(v1::ROUTING_STRATEGY_BUSYOVER, addresses.size());
  if (d.ok()) absl::StrAppend(&d.message, " → ", d.targets[0].address);
  if (!skipped.empty()) absl::StrAppend(&d.message, "; skipped ", absl::StrJoin(skipped, ", "));
  if (!d.ok()) absl::StrAppend(&d.message, "; no executor is idle for job ", job_id);
  return d;
}

RouteDecision Router::Route(int64_t job_id, absl::string_view app, v1::RoutingStrategy strategy,
                            const std::vector<std::string>& addresses, int32_t manual_shard_index,
                            int32_t manual_shard_total) {
  if (strategy == v1::ROUTING_STRATEGY_UNSPECIFIED) strategy = v1::ROUTING_STRATEGY_FIRST;
  RouteDecision d;
  if (addresses.empty()) {
    d.message = absl::StrCat(Over(strategy, 0), ": no candidate");
    return d;
  }
  const bool manual_shard = manual_shard_total > 0;
  auto single = [&](const std::string& address) {
    d.targets.push_back(
        {address, manual_shard ? manual_shard_index : 0, manual_shard ? manual_shard_total : 1});
    d.message = absl::StrCat(Over(strategy, addresses.size()), " → ", address);
  };
  switch (strategy) {
    case v1::ROUTING_STRATEGY_LAST:
      single(addresses.back());
      break;
    case v1::ROUTING_STRATEGY_ROUND: {
      absl::MutexLock lock(&mu_);
      MaybeResetLocked();
      single(addresses[RoundLocked(job_id) % addresses.size()]);
      break;
    }
    case v1::ROUTING_STRATEGY_RANDOM: {
      absl::MutexLock lock(&mu_);
      single(addresses[absl::Uniform<size_t>(gen_, 0, addresses.size())]);
      break;
    }
    case v1::ROUTING_STRATEGY_CONSISTENT_HASH:
      single(rings_.Pick(job_id, addresses));
      break;
    case v1::ROUTING_STRATEGY_LEAST_FREQUENTLY_USED: {
      absl::MutexLock lock(&mu_);
      MaybeResetLocked();
      single(LfuLocked(job_id, addresses));
      break;
    }
    case v1::ROUTING_STRATEGY_LEAST_RECENTLY_USED: {
      absl::MutexLock lock(&mu_);
      MaybeResetLocked();
      single(LruLocked(job_id, addresses));
      break;
    }
    case v1::ROUTING_STRATEGY_FAILOVER:
      d = Failover(app, addresses);
      if (manual_shard && d.ok()) {
        d.targets[0].shard_index = manual_shard_index;
        d.targets[0].shard_total = manual_shard_total;
      }
      break;
    case v1::ROUTING_STRATEGY_BUSYOVER:
      d = Busyover(job_id, app, addresses);
      if (manual_shard && d.ok()) {
        d.targets[0].shard_index = manual_shard_index;
        d.targets[0].shard_total = manual_shard_total;
      }
      break;
    case v1::ROUTING_STRATEGY_SHARDING_BROADCAST: {
      if (manual_shard) {
        // A retried shard goes to the executor at its index, or the first if the set shrank.
        const size_t i = static_cast<size_t>(manual_shard_index);
        single(i < addresses.size() ? addresses[i] : addresses[0]);
        absl::StrAppend(&d.message, " (shard ", manual_shard_index, "/", manual_shard_total, ")");
        break;
      }
      const int32_t n = static_cast<int32_t>(addresses.size());
      for (int32_t i = 0; i < n; ++i) d.targets.push_back({addresses[i], i, n});
      d.message =
          absl::StrCat(Over(strategy, addresses.size()), " → ", absl::StrJoin(addresses, ", "));
      break;
    }
    case v1::ROUTING_STRATEGY_FIRST:
    default:
      single(addresses.front());
      break;
  }
  return d;
}

}  // namespace jobwheel::dispatcher
