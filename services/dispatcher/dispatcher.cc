#include "services/dispatcher/dispatcher.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"
#include "spdlog/spdlog.h"

namespace jobwheel::dispatcher {
namespace {

TriggerResolver::Options ResolverOptions(const DispatcherOptions& options,
                                         DispatcherMetrics& metrics) {
  TriggerResolver::Options o = options.resolver();
  o.on_settled = [&metrics](absl::string_view presence, size_t runs) {
    metrics.LostTriggersSettled(presence, runs);
  };
  return o;
}

}  // namespace

Dispatcher::Dispatcher(DispatchStore& store, const ExecutorDirectory& directory, Router& router,
                       ExecutorClients& executors, TriggerPools& pools, DispatcherMetrics& metrics,
                       Clock& clock, Options options)
    : store_(store),
      directory_(directory),
      pools_(pools),
      metrics_(metrics),
      clock_(clock),
      options_(options),
      planner_(directory, router, pools, options.trigger_tick),
      writer_(store, metrics, clock, options.writer()),
      resolver_(executors, clock, ResolverOptions(options, metrics),
                [this](TriggerOutcome o) { writer_.Enqueue(std::move(o)); }),
      sender_(
          executors, pools, metrics, clock, options.sender(),
          [this](TriggerOutcome o) { writer_.Enqueue(std::move(o)); }, &resolver_),
      results_(store, writer_, metrics, clock, options.max_result_message_bytes),
      held_(clock, options.max_trigger_hold, metrics,
            [this](std::vector<RoutedRun> due) { SendDue(std::move(due)); }) {}

Dispatcher::~Dispatcher() { Shutdown(); }

void Dispatcher::Start() {
  writer_.Start();
  resolver_.Start();
  held_.Start();
}

void Dispatcher::Shutdown() {
  // Held runs are sent first (when due); calls in flight finish; lost answers are settled (or
  // left unknown); their answers reach the writer before it stops.
  held_.Shutdown();
  reroute_pool_.Shutdown();
  pools_.Shutdown();
  resolver_.Shutdown();
  writer_.Shutdown();
}

absl::StatusOr<v1::DispatchResponse> Dispatcher::Dispatch(const v1::DispatchRequest& request) {
  v1::DispatchResponse response;
  if (request.fires_size() == 0) return response;
  // A run never starts before its time, so a fire further ahead than we hold runs for is
  // refused (the scheduler retries it later): clocks apart, or a lead above our hold.
  const absl::Time now = clock_.Now();
  for (int i = 0; i < request.fires_size(); ++i) {
    const absl::Duration ahead = FromProto(request.fires(i).scheduled_time()) - now;
    if (ahead > options_.max_trigger_hold) {
      return absl::FailedPreconditionError(absl::StrCat(
          "fires[", i, "].scheduled_time: ", absl::FormatDuration(ahead),
          " ahead of this dispatcher's clock, more than --max_trigger_hold (",
          absl::FormatDuration(options_.max_trigger_hold),
          "): are the clocks apart, or the scheduler's --dispatch_lead above it? (fire ",
          request.fires(i).fire_id(), ")"));
    }
  }
  if (!directory_.ready()) {
    return absl::UnavailableError(
        "dispatcher not ready: no executor snapshot from the registry yet; retry");
  }
  std::vector<v1::Fire> fires(request.fires().begin(), request.fires().end());
  absl::StatusOr<std::vector<FireResult>> results =
      store_.DispatchFires(fires, now, [this, now](const v1::Fire& f) {
        FirePlan plan = planner_.Plan(f);
        plan.trigger_time = planner_.TriggerTime(f, now);
        return plan;
      });
  if (!results.ok()) return results.status();

  // The runs to send now, and the runs held until their fire is due (with that time).
  std::vector<RoutedRun> now_runs;
  std::vector<std::pair<RoutedRun, absl::Time>> held;
  for (size_t i = 0; i < results->size(); ++i) {
    const FireResult& r = (*results)[i];
    v1::FireOutcome* o = response.add_outcomes();
    o->set_fire_id(r.fire_id);
    o->set_status(r.status);
    o->set_message(r.message);
    for (int64_t id : r.run_ids) o->add_run_ids(id);
    o->set_not_found(r.not_found);
    metrics_.Fire(r.duplicate                          ? "duplicate"
                  : r.not_found                        ? "not_found"
                  : r.status == v1::FIRE_STATUS_FAILED ? "failed"
                                                       : "dispatched");
    for (const CreatedRun& run : r.created) {
      if (IsTerminal(run.planned.status)) metrics_.RunFinished(run.planned.status);
    }
    if (r.status == v1::FIRE_STATUS_FAILED && !r.duplicate && !r.not_found) {
      spdlog::warn("fire {}: failed: {}", r.fire_id, r.message);
    }
    planner_.Route(fires[i], r, now, &now_runs, &held);
  }
  if (!held.empty() && !held_.Hold(held)) {
    // Shut down (a Dispatch after Shutdown): never early, so not sent.
    for (const auto& [routed, when] : held) {
      writer_.Enqueue(NotTriggered(routed.run.request.run_id(), "dispatcher shutting down", now));
    }
  }
  sender_.Send(std::move(now_runs));
  return response;
}

absl::StatusOr<v1::ReportResultsResponse> Dispatcher::ReportResults(
    const v1::ReportResultsRequest& request, const AppScope& scope) {
  return results_.Report(request, scope);
}

void Dispatcher::SendDue(std::vector<RoutedRun> due) {
  // The executors online now, by app (looked up once per app and tick): address → instance.
  absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, std::string>> online;
  std::vector<RoutedRun> runs, orphans;
  runs.reserve(due.size());
  for (RoutedRun& h : due) {
    const std::string& app = h.fire->job().app();
    auto [it, added] = online.try_emplace(app);
    if (added) {
      for (const v1::Executor& e : directory_.Executors(app)) {
        it->second.emplace(e.address(), e.instance());
      }
    }
    auto at = it->second.find(h.address);
    if (at == it->second.end()) {
      orphans.push_back(std::move(h));
      continue;
    }
    // A new process may have taken the address while the run was held: it is for that one.
    h.run.request.set_executor_instance(at->second);
    runs.push_back(std::move(h));
  }
  sender_.Send(std::move(runs));
  if (!orphans.empty()) {
    // Routing may probe executors and moving the rows is a transaction: off the timer's
    // thread, which must be free for the next tick.
    auto moved = std::make_shared<std::vector<RoutedRun>>(std::move(orphans));
    reroute_pool_.SubmitMustRun([this, moved] { RerouteHeld(std::move(*moved)); });
  }
}

void Dispatcher::RerouteHeld(std::vector<RoutedRun> orphans) {
  std::vector<Reroute> reroutes;  // Parallel to `moving`.
  std::vector<RoutedRun*> moving;
  std::vector<std::string> instances;  // Parallel to `moving`: the new executor's process.
  for (RoutedRun& h : orphans) {
    // Routed again as the fire was, for this run's shard.
    v1::Fire fire = *h.fire;
    if (h.run.request.shard_total() > 1) {
      fire.set_shard_index(h.run.request.shard_index());
      fire.set_shard_total(h.run.request.shard_total());
    }
    FirePlan plan = planner_.Plan(fire);
    const std::string left = absl::StrCat("executor ", h.address, " left before the trigger");
    if (plan.status == v1::FIRE_STATUS_FAILED || plan.runs.empty()) {
      spdlog::warn("run {}: {}; not triggered: {}", h.run.request.run_id(), left, plan.reason);
      writer_.Enqueue(NotTriggered(h.run.request.run_id(), absl::StrCat(left, ": ", plan.reason),
                                   clock_.Now()));
      continue;
    }
    const PlannedRun& to = plan.runs.front();
    reroutes.push_back(Reroute{h.run.request.run_id(), to.executor_address,
                               absl::StrCat("; ", left, ": ", to.trigger_message)});
    moving.push_back(&h);
    instances.push_back(to.executor_instance);
  }
  if (moving.empty()) return;
  absl::StatusOr<std::vector<int64_t>> moved = store_.RerouteRuns(reroutes);
  absl::flat_hash_set<int64_t> moved_ids;
  if (moved.ok()) {
    moved_ids.insert(moved->begin(), moved->end());
  } else {
    // The row still names the old executor: the trigger goes there and fails, as it would have.
    spdlog::error("moving {} held runs off departed executors failed: {}", moving.size(),
                  moved.status().ToString());
  }
  std::vector<RoutedRun> runs;
  for (size_t i = 0; i < moving.size(); ++i) {
    RoutedRun& h = *moving[i];
    if (moved.ok() && !moved_ids.contains(h.run.request.run_id())) continue;  // Not PENDING.
    if (moved.ok()) {
      h.address = reroutes[i].executor_address;
      h.run.request.set_executor_instance(instances[i]);
    }
    runs.push_back(std::move(h));
  }
  sender_.Send(std::move(runs));
}

}  // namespace jobwheel::dispatcher
