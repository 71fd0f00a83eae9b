#include "services/dispatcher/planner.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"

namespace jobwheel::dispatcher {
namespace {

constexpr char kAnyHandler[] = "*";

// The executor at `address` in `live` (sorted by address, as ExecutorDirectory returns them),
// or null.
const v1::Executor* Find(const std::vector<v1::Executor>& live, const std::string& address) {
  auto it =
      std::lower_bound(live.begin(), live.end(), address,
                       [](const v1::Executor& e, const std::string& a) { return e.address() < a; });
  return it != live.end() && it->address() == address ? &*it : nullptr;
}

// A FAILED fire, with one FAILED run carrying the reason (so run listings show it).
FirePlan Failed(const v1::Fire& fire, std::string reason) {
  FirePlan plan;
  plan.status = v1::FIRE_STATUS_FAILED;
  plan.reason = std::move(reason);
  PlannedRun run;
  run.status = v1::RUN_STATUS_FAILED;
  run.trigger_message = plan.reason;
  if (fire.shard_total() > 0) {
    run.shard_index = fire.shard_index();
    run.shard_total = fire.shard_total();
  }
  plan.runs.push_back(std::move(run));
  return plan;
}

}  // namespace

Planner::Planner(const ExecutorDirectory& directory, Router& router, const TriggerPools& pools,
                 absl::Duration trigger_tick)
    : directory_(directory), router_(router), pools_(pools), trigger_tick_(trigger_tick) {}

absl::Time Planner::TriggerTime(const v1::Fire& fire, absl::Time now) const {
  absl::Time at = FromProto(fire.scheduled_time());
  if (at <= now) return now;  // Due. (Never earlier: Dispatch refuses fires too far ahead.)
  if (trigger_tick_ > absl::ZeroDuration()) {
    at = absl::UnixEpoch() + absl::Ceil(at - absl::UnixEpoch(), trigger_tick_);
  }
  return at;
}

FirePlan Planner::Plan(const v1::Fire& fire) {
  const v1::Job& job = fire.job();
  const std::vector<v1::Executor> live = directory_.Executors(job.app());
  if (live.empty()) {
    return Failed(fire, absl::StrCat("job ", job.id(), ": no executor online for app ", job.app()));
  }
  std::vector<std::string> candidates;
  candidates.reserve(live.size());
  const bool script = IsScript(job.glue_type());
  size_t draining = 0;
  for (const v1::Executor& e : live) {
    // Drained by an operator: its running runs finish, it gets no new one.
    if (e.draining()) {
      ++draining;
      continue;
    }
    // "*": an executor that runs whatever handler it is asked for and answers for unknown ones
    // itself (an XXL-JOB executor behind the gateway lists no handlers).
    const bool fits =
        script ? e.allow_scripts()
               : std::find_if(e.handlers().begin(), e.handlers().end(), [&](const std::string& h) {
                   return h == job.handler() || h == kAnyHandler;
                 }) != e.handlers().end();
    if (fits) candidates.push_back(e.address());
  }
  if (candidates.empty() && draining == live.size()) {
    return Failed(fire, absl::StrCat("job ", job.id(), ": every executor online for app ",
                                     job.app(), " (", live.size(), ") is drained"));
  }
  if (candidates.empty()) {
    return Failed(fire,
                  script ? absl::StrCat("job ", job.id(), ": none of the ", live.size(),
                                        " executors online for app ", job.app(), " allows scripts")
                         : absl::StrCat("job ", job.id(), ": none of the ", live.size(),
                                        " executors online for app ", job.app(), " has handler ",
                                        job.handler()));
  }
  // Each planned run names the process it is for (the executors of the snapshot planned on).
  auto instance_of = [&live](const std::string& address) {
    const v1::Executor* e = Find(live, address);
    return e != nullptr ? e->instance() : std::string();
  };
  FirePlan plan;
  if (!fire.executor_address().empty()) {
    const std::string& want = fire.executor_address();
    const v1::Executor* wanted = Find(live, want);
    if (wanted == nullptr) {
      return Failed(fire, absl::StrCat("job ", job.id(), ": executor ", want,
                                       " is not online for app ", job.app()));
    }
    if (wanted->draining()) {
      return Failed(fire,
                    absl::StrCat("job ", job.id(), ": executor ", want, " is drained (",
                                 "AppAdminService/SetExecutorDraining); trigger it on another"));
    }
    if (!std::binary_search(candidates.begin(), candidates.end(), want)) {
      return Failed(fire, absl::StrCat("job ", job.id(), ": executor ", want,
                                       script ? " does not allow scripts"
                                              : absl::StrCat(" has no handler ", job.handler())));
    }
    PlannedRun run;
    run.executor_address = want;
    run.executor_instance = wanted->instance();
    if (fire.shard_total() > 0) {
      run.shard_index = fire.shard_index();
      run.shard_total = fire.shard_total();
    }
    run.trigger_message =
        absl::StrCat("manual executor over ", candidates.size(), " candidates → ", want);
    plan.runs.push_back(std::move(run));
    return plan;
  }
  RouteDecision d = router_.Route(job.id(), job.app(), job.routing_strategy(), candidates,
                                  fire.shard_index(), fire.shard_total());
  if (!d.ok()) return Failed(fire, absl::StrCat("job ", job.id(), ": ", d.message));
  const bool broadcast = d.targets.size() > 1;
  for (const RouteTarget& t : d.targets) {
    PlannedRun run;
    run.executor_address = t.address;
    run.executor_instance = instance_of(t.address);
    run.shard_index = t.shard_index;
    run.shard_total = t.shard_total;
    run.trigger_message = broadcast ? absl::StrCat(d.message, "; shard ", t.shard_index, "/",
                                                   t.shard_total, " → ", t.address)
                                    : d.message;
    plan.runs.push_back(std::move(run));
  }
  return plan;
}

void Planner::Route(const v1::Fire& fire, const FireResult& result, absl::Time now,
                    std::vector<RoutedRun>* now_runs,
                    std::vector<std::pair<RoutedRun, absl::Time>>* held) const {
  if (result.created.empty()) return;
  const absl::Time when = TriggerTime(fire, now);
  const TriggerPool pool = pools_.PoolFor(fire.job().id());
  std::shared_ptr<const v1::Fire> held_fire;  // Shared by the fire's held runs.
  for (const CreatedRun& run : result.created) {
    if (run.planned.status != v1::RUN_STATUS_PENDING) continue;
    RoutedRun routed{run.planned.executor_address, pool, MakePendingRun(fire, run), nullptr};
    if (when > now) {
      if (held_fire == nullptr) held_fire = std::make_shared<const v1::Fire>(fire);
      routed.fire = held_fire;
      held->emplace_back(std::move(routed), when);
    } else {
      now_runs->push_back(std::move(routed));
    }
  }
}

PendingRun Planner::MakePendingRun(const v1::Fire& fire, const CreatedRun& run) {
  const v1::Job& job = fire.job();
  PendingRun p;
  v1::RunRequest& req = p.request;
  req.set_run_id(run.run_id);
  req.set_job_id(job.id());
  req.set_fire_id(fire.fire_id());
  req.set_handler(job.handler());
  req.set_param(fire.has_param() ? fire.param() : job.param());
  req.set_shard_index(run.planned.shard_index);
  req.set_shard_total(run.planned.shard_total);
  req.set_trigger_type(fire.trigger_type());
  req.set_block_strategy(job.block_strategy());
  if (job.has_timeout()) *req.mutable_timeout() = job.timeout();
  req.set_glue_type(job.glue_type());
  req.set_script_source(job.script_source());
  req.set_script_version(job.script_version());
  *req.mutable_scheduled_time() = fire.scheduled_time();
  req.set_attempt(fire.attempt());
  req.set_result_key(run.planned.result_key);  // Made by the store with the run.
  req.set_app(job.app());
  req.set_executor_instance(run.planned.executor_instance);
  p.strategy = fire.executor_address().empty() ? StrategyName(job.routing_strategy()) : "manual";
  return p;
}

}  // namespace jobwheel::dispatcher
