#include "services/dispatcher/dispatcher.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/time/proto_time.h"
#include "spdlog/spdlog.h"

namespace jobwheel::dispatcher {
namespace {

bool IsScript(v1::GlueType glue) {
  return glue == v1::GLUE_TYPE_SCRIPT_SHELL || glue == v1::GLUE_TYPE_SCRIPT_PYTHON;
}

bool IsTerminal(v1::RunStatus s) {
  return s >= v1::RUN_STATUS_SUCCEEDED && s <= v1::RUN_STATUS_DISCARDED;
}

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

absl::Status ValidateFire(const v1::Fire& f, size_t i) {
  const std::string at = absl::StrCat("fires[", i, "]");
  if (f.fire_id() <= 0)
    return absl::InvalidArgumentError(absl::StrCat(at, ".fire_id: must be positive"));
  if (!f.has_job() || f.job().id() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".job.id: must be positive (fire ", f.fire_id(), ")"));
  }
  if (f.job().app().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".job.app: must not be empty (fire ", f.fire_id(), ")"));
  }
  if (!IsScript(f.job().glue_type()) && f.job().handler().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".job.handler: must not be empty (fire ", f.fire_id(), ")"));
  }
  if (f.shard_total() < 0 ||
      (f.shard_total() > 0 && (f.shard_index() < 0 || f.shard_index() >= f.shard_total()))) {
    return absl::InvalidArgumentError(absl::StrCat(at, ".shard_index: ", f.shard_index(), "/",
                                                   f.shard_total(), " is not a valid shard (fire ",
                                                   f.fire_id(), ")"));
  }
  if (f.attempt() < 0)
    return absl::InvalidArgumentError(absl::StrCat(at, ".attempt: must not be negative"));
  return absl::OkStatus();
}

// The run's new state from the executor's answer to Run; *label is the metric's outcome.
TriggerOutcome OutcomeOf(int64_t run_id, const absl::StatusOr<v1::RunResponse>& r, absl::Time at,
                         std::string* label) {
  TriggerOutcome o;
  o.run_id = run_id;
  o.at = at;
  if (!r.ok()) {
    o.status = v1::RUN_STATUS_FAILED;
    o.message_suffix =
        absl::StrCat("; trigger error: ", absl::StatusCodeToString(r.status().code()), ": ",
                     r.status().message());
    *label = "error";
    return o;
  }
  std::string answer;
  switch (r->disposition()) {
    case v1::RUN_DISPOSITION_STARTED:
      o.status = v1::RUN_STATUS_RUNNING;
      answer = "STARTED";
      *label = "started";
      break;
    case v1::RUN_DISPOSITION_QUEUED:
      o.status = v1::RUN_STATUS_RUNNING;
      answer = "QUEUED";
      *label = "queued";
      break;
    case v1::RUN_DISPOSITION_DISCARDED:
      o.status = v1::RUN_STATUS_DISCARDED;
      answer = "DISCARDED";
      *label = "discarded";
      break;
    default:
      o.status = v1::RUN_STATUS_FAILED;
      answer = r->disposition() == v1::RUN_DISPOSITION_REJECTED ? "REJECTED" : "no disposition";
      *label = "rejected";
      break;
  }
  o.message_suffix = absl::StrCat("; executor: ", answer);
  if (!r->message().empty()) absl::StrAppend(&o.message_suffix, " (", r->message(), ")");
  return o;
}

}  // namespace

Dispatcher::Dispatcher(DispatchStore& store, const ExecutorDirectory& directory, Router& router,
                       ExecutorClients& executors, TriggerPools& pools, DispatcherMetrics* metrics,
                       Clock& clock, Options options)
    : store_(store),
      directory_(directory),
      router_(router),
      executors_(executors),
      pools_(pools),
      metrics_(metrics),
      clock_(clock),
      options_(options) {}

Dispatcher::~Dispatcher() { Shutdown(); }

void Dispatcher::Start() {
  writer_ = std::thread([this] { WriterLoop(); });
  trigger_thread_ = std::thread([this] { HeldTriggerLoop(); });
}

void Dispatcher::Shutdown() {
  // Held runs are triggered first (when due); queued trigger calls still run; their answers
  // reach the writer before it stops.
  {
    absl::MutexLock lock(&held_runs_mu_);
    triggers_stopping_ = true;
  }
  trigger_timer_.WakeUp();
  if (trigger_thread_.joinable()) trigger_thread_.join();
  reroute_pool_.Shutdown();
  pools_.Shutdown();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (writer_.joinable()) writer_.join();
}

size_t Dispatcher::pending_outcomes() const {
  absl::MutexLock lock(&mu_);
  return outcomes_.size() + writing_ + held_.size() + folding_;
}

size_t Dispatcher::held_outcomes() const {
  absl::MutexLock lock(&mu_);
  return held_.size();
}

size_t Dispatcher::held_runs() const {
  absl::MutexLock lock(&held_runs_mu_);
  return held_runs_.size();
}

void Dispatcher::WakeWriter() {
  {
    absl::MutexLock lock(&mu_);
    ++wakes_;
  }
  trigger_timer_.WakeUp();
}

absl::Time Dispatcher::TriggerTime(const v1::Fire& fire, absl::Time now) const {
  absl::Time at = FromProto(fire.scheduled_time());
  if (at <= now) return now;  // Due. (Never earlier: Dispatch refuses fires too far ahead.)
  if (options_.trigger_tick > absl::ZeroDuration()) {
    at = absl::UnixEpoch() + absl::Ceil(at - absl::UnixEpoch(), options_.trigger_tick);
  }
  return at;
}

FirePlan Dispatcher::Plan(const v1::Fire& fire) {
  const v1::Job& job = fire.job();
  const std::vector<v1::Executor> live = directory_.Executors(job.app());
  if (live.empty()) {
    return Failed(fire, absl::StrCat("job ", job.id(), ": no executor online for app ", job.app()));
  }
  std::vector<std::string> candidates;
  candidates.reserve(live.size());
  const bool script = IsScript(job.glue_type());
  for (const v1::Executor& e : live) {
    const bool fits = script ? e.allow_scripts()
                             : std::find(e.handlers().begin(), e.handlers().end(), job.handler()) !=
                                   e.handlers().end();
    if (fits) candidates.push_back(e.address());
  }
  if (candidates.empty()) {
    return Failed(fire,
                  script ? absl::StrCat("job ", job.id(), ": none of the ", live.size(),
                                        " executors online for app ", job.app(), " allows scripts")
                         : absl::StrCat("job ", job.id(), ": none of the ", live.size(),
                                        " executors online for app ", job.app(), " has handler ",
                                        job.handler()));
  }
  FirePlan plan;
  if (!fire.executor_address().empty()) {
    const std::string& want = fire.executor_address();
    const bool online = std::any_of(live.begin(), live.end(),
                                    [&](const v1::Executor& e) { return e.address() == want; });
    if (!online) {
      return Failed(fire, absl::StrCat("job ", job.id(), ": executor ", want,
                                       " is not online for app ", job.app()));
    }
    if (!std::binary_search(candidates.begin(), candidates.end(), want)) {
      return Failed(fire, absl::StrCat("job ", job.id(), ": executor ", want,
                                       script ? " does not allow scripts"
                                              : absl::StrCat(" has no handler ", job.handler())));
    }
    PlannedRun run;
    run.executor_address = want;
    if (fire.shard_total() > 0) {
      run.shard_index = fire.shard_index();
      run.shard_total = fire.shard_total();
    }
    run.trigger_message =
        absl::StrCat("manual executor over ", candidates.size(), " candidates → ", want);
    plan.runs.push_back(std::move(run));
    return plan;
  }
  RouteDecision d = router_.Route(job.id(), job.routing_strategy(), candidates, fire.shard_index(),
                                  fire.shard_total());
  if (!d.ok()) return Failed(fire, absl::StrCat("job ", job.id(), ": ", d.message));
  const bool broadcast = d.targets.size() > 1;
  for (const RouteTarget& t : d.targets) {
    PlannedRun run;
    run.executor_address = t.address;
    run.shard_index = t.shard_index;
    run.shard_total = t.shard_total;
    run.trigger_message = broadcast ? absl::StrCat(d.message, "; shard ", t.shard_index, "/",
                                                   t.shard_total, " → ", t.address)
                                    : d.message;
    plan.runs.push_back(std::move(run));
  }
  return plan;
}

absl::StatusOr<v1::DispatchResponse> Dispatcher::Dispatch(const v1::DispatchRequest& request) {
  if (static_cast<size_t>(request.fires_size()) > options_.max_fires_per_call) {
    return absl::InvalidArgumentError(absl::StrCat("fires: at most ", options_.max_fires_per_call,
                                                   " per call, got ", request.fires_size()));
  }
  for (int i = 0; i < request.fires_size(); ++i) {
    absl::Status s = ValidateFire(request.fires(i), i);
    if (!s.ok()) return s;
  }
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
        FirePlan plan = Plan(f);
        plan.trigger_time = TriggerTime(f, now);
        return plan;
      });
  if (!results.ok()) return results.status();

  // The runs to trigger now, and the runs held until their fire is due (with that time).
  std::vector<RoutedRun> now_runs;
  std::vector<std::pair<RoutedRun, absl::Time>> held;
  for (size_t i = 0; i < results->size(); ++i) {
    std::shared_ptr<const v1::Fire> held_fire;  // Shared by the fire's held runs.
    const FireResult& r = (*results)[i];
    v1::FireOutcome* o = response.add_outcomes();
    o->set_fire_id(r.fire_id);
    o->set_status(r.status);
    o->set_message(r.message);
    for (int64_t id : r.run_ids) o->add_run_ids(id);
    o->set_not_found(r.not_found);
    if (metrics_ != nullptr) {
      metrics_->Fire(r.duplicate                          ? "duplicate"
                     : r.not_found                        ? "not_found"
                     : r.status == v1::FIRE_STATUS_FAILED ? "failed"
                                                          : "dispatched");
    }
    if (r.status == v1::FIRE_STATUS_FAILED && !r.duplicate && !r.not_found) {
      spdlog::warn("fire {}: failed: {}", r.fire_id, r.message);
    }
    const absl::Time when = r.created.empty() ? now : TriggerTime(fires[i], now);
    for (const CreatedRun& run : r.created) {
      if (run.planned.status == v1::RUN_STATUS_PENDING) {
        RoutedRun routed{run.planned.executor_address, pools_.PoolFor(fires[i].job().id()),
                         MakePendingRun(fires[i], run), nullptr};
        if (when > now) {
          if (held_fire == nullptr) held_fire = std::make_shared<const v1::Fire>(fires[i]);
          routed.fire = held_fire;
          held.emplace_back(std::move(routed), when);
        } else {
          now_runs.push_back(std::move(routed));
        }
      } else if (metrics_ != nullptr && IsTerminal(run.planned.status)) {
        metrics_->RunFinished(run.planned.status);
      }
    }
  }
  if (!held.empty()) Hold(std::move(held), now);
  TriggerGrouped(std::move(now_runs));
  return response;
}

void Dispatcher::Hold(std::vector<std::pair<RoutedRun, absl::Time>> runs, absl::Time now) {
  std::vector<std::pair<int64_t, absl::Time>> timed;
  timed.reserve(runs.size());
  bool stopping;
  {
    absl::MutexLock lock(&held_runs_mu_);
    stopping = triggers_stopping_;
    if (!stopping) {
      for (auto& [routed, when] : runs) {
        const int64_t run_id = routed.run.request.run_id();
        held_runs_.emplace(run_id, std::move(routed));
        timed.emplace_back(run_id, when);
      }
    }
  }
  if (stopping) {
    // The trigger thread is done (a Dispatch after Shutdown): never early, so not run.
    for (const auto& [routed, when] : runs) {
      TriggerOutcome o;
      o.run_id = routed.run.request.run_id();
      o.status = v1::RUN_STATUS_FAILED;
      o.message_suffix = "; not triggered: dispatcher shutting down";
      o.at = now;
      Enqueue(std::move(o));
    }
    return;
  }
  // Recorded before it goes on the timer: the trigger thread finds every run it pops.
  for (const auto& [run_id, when] : timed) trigger_timer_.Add(run_id, when);
  if (metrics_ != nullptr) metrics_->RunsHeld(held_runs());
}

void Dispatcher::TriggerGrouped(std::vector<RoutedRun> runs) {
  // One group per (executor, trigger pool), in the order the runs were created. A group that
  // reaches max_runs_per_batch goes out at once, the rest at the end.
  struct Group {
    std::string address;
    TriggerPool pool;
    std::vector<PendingRun> runs;
  };
  std::vector<Group> groups;
  absl::flat_hash_map<std::pair<std::string, TriggerPool>, size_t> group_of;
  const size_t max_batch = std::max<size_t>(1, options_.max_runs_per_batch);
  const absl::Time now = clock_.Now();
  for (RoutedRun& r : runs) {
    if (metrics_ != nullptr) {
      metrics_->TriggerLateness(now - FromProto(r.run.request.scheduled_time()));
    }
    auto [it, added] = group_of.try_emplace(std::make_pair(r.address, r.pool), groups.size());
    if (added) groups.push_back(Group{std::move(r.address), r.pool, {}});
    Group& g = groups[it->second];
    g.runs.push_back(std::move(r.run));
    if (g.runs.size() >= max_batch) {
      TriggerBatch(g.address, g.pool, std::exchange(g.runs, std::vector<PendingRun>()));
    }
  }
  for (Group& g : groups) {
    if (!g.runs.empty()) TriggerBatch(g.address, g.pool, std::move(g.runs));
  }
}

void Dispatcher::HeldTriggerLoop() {
  absl::Time stop_deadline = absl::InfiniteFuture();  // Real time, once stopping.
  while (true) {
    std::vector<int64_t> due;
    {
      absl::MutexLock lock(&held_runs_mu_);
      if (triggers_stopping_) {
        if (held_runs_.empty()) return;
        if (stop_deadline == absl::InfiniteFuture()) {
          // Every held run is due within the hold on a real clock; the extra second keeps
          // the last of them from going out early.
          stop_deadline = absl::Now() + options_.max_trigger_hold + absl::Seconds(1);
        }
      }
    }
    if (absl::Now() >= stop_deadline) {
      // Shutting down and the clock does not reach them (a test's clock): early, not never.
      due = trigger_timer_.PopDue(absl::InfiniteFuture(), std::numeric_limits<size_t>::max());
    } else {
      // Bounded, so a Shutdown that came between the check above and this wait is seen.
      due = trigger_timer_.WaitDue([this] { return clock_.Now(); }, 100000,
                                   std::min(stop_deadline, absl::Now() + absl::Milliseconds(200)));
    }
    if (due.empty()) continue;
    std::vector<RoutedRun> taken;
    taken.reserve(due.size());
    {
      absl::MutexLock lock(&held_runs_mu_);
      for (int64_t id : due) {
        auto it = held_runs_.find(id);
        if (it == held_runs_.end()) continue;
        taken.push_back(std::move(it->second));
        held_runs_.erase(it);
      }
    }
    // The executors online now, by app (looked up once per app and tick).
    absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> online;
    std::vector<RoutedRun> runs, orphans;
    for (RoutedRun& h : taken) {
      const std::string& app = h.fire->job().app();
      auto [it, added] = online.try_emplace(app);
      if (added) {
        for (const v1::Executor& e : directory_.Executors(app)) it->second.insert(e.address());
      }
      (it->second.contains(h.address) ? runs : orphans).push_back(std::move(h));
    }
    if (metrics_ != nullptr) metrics_->RunsHeld(held_runs());
    TriggerGrouped(std::move(runs));
    if (!orphans.empty()) {
      // Routing may probe executors and moving the rows is a transaction: off this thread,
      // which must be free for the next tick.
      auto moved = std::make_shared<std::vector<RoutedRun>>(std::move(orphans));
      reroute_pool_.SubmitMustRun([this, moved] { RerouteHeld(std::move(*moved)); });
    }
  }
}

void Dispatcher::RerouteHeld(std::vector<RoutedRun> orphans) {
  std::vector<Reroute> reroutes;  // Parallel to `moving`.
  std::vector<RoutedRun*> moving;
  for (RoutedRun& h : orphans) {
    // Routed again as the fire was, for this run's shard.
    v1::Fire fire = *h.fire;
    if (h.run.request.shard_total() > 1) {
      fire.set_shard_index(h.run.request.shard_index());
      fire.set_shard_total(h.run.request.shard_total());
    }
    FirePlan plan = Plan(fire);
    const std::string left = absl::StrCat("executor ", h.address, " left before the trigger");
    if (plan.status == v1::FIRE_STATUS_FAILED || plan.runs.empty()) {
      spdlog::warn("run {}: {}; not triggered: {}", h.run.request.run_id(), left, plan.reason);
      TriggerOutcome o;
      o.run_id = h.run.request.run_id();
      o.status = v1::RUN_STATUS_FAILED;
      o.message_suffix = absl::StrCat("; not triggered: ", left, ": ", plan.reason);
      o.at = clock_.Now();
      Enqueue(std::move(o));
      continue;
    }
    const PlannedRun& to = plan.runs.front();
    reroutes.push_back(Reroute{h.run.request.run_id(), to.executor_address,
                               absl::StrCat("; ", left, ": ", to.trigger_message)});
    moving.push_back(&h);
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
    if (moved.ok()) h.address = reroutes[i].executor_address;
    runs.push_back(std::move(h));
  }
  TriggerGrouped(std::move(runs));
}

Dispatcher::PendingRun Dispatcher::MakePendingRun(const v1::Fire& fire, const CreatedRun& run) {
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
  p.strategy = fire.executor_address().empty() ? StrategyName(job.routing_strategy()) : "manual";
  return p;
}

void Dispatcher::TriggerBatch(const std::string& address, TriggerPool pool,
                              std::vector<PendingRun> runs) {
  std::vector<int64_t> job_ids;
  job_ids.reserve(runs.size());
  for (const PendingRun& run : runs) job_ids.push_back(run.request.job_id());
  if (metrics_ != nullptr) metrics_->TriggerBatchSize(runs.size());
  auto batch = std::make_shared<const std::vector<PendingRun>>(std::move(runs));
  bool accepted = false;
  // The call is asynchronous: no thread waits for the executor, and the batches of a Dispatch
  // are all on their way at once instead of taking turns on a few trigger threads. The call's
  // duration counts for every job of the batch in the slow-pool classification.
  pools_.SubmitBatchAsync(
      pool, std::move(job_ids),
      [this, address, batch](std::function<void()> done) {
        if (IsLegacy(address)) {
          TriggerEach(address, batch, std::move(done));
          return;
        }
        v1::RunBatchRequest req;
        req.mutable_runs()->Reserve(static_cast<int>(batch->size()));
        for (const PendingRun& run : *batch) *req.add_runs() = run.request;
        executors_.RunBatchAsync(
            address, std::move(req), options_.run_deadline,
            [this, address, batch,
             done = std::move(done)](absl::StatusOr<v1::RunBatchResponse> r) mutable {
              if (r.status().code() == absl::StatusCode::kUnimplemented) {
                // An executor on an SDK without RunBatch (rolling upgrade): nothing ran.
                MarkLegacy(address);
                TriggerEach(address, batch, std::move(done));
                return;
              }
              if (r.ok() && static_cast<size_t>(r->responses_size()) != batch->size()) {
                r = absl::InternalError(absl::StrCat("RunBatch of ", batch->size(),
                                                     " runs answered with ", r->responses_size(),
                                                     " responses"));
              }
              for (size_t i = 0; i < batch->size(); ++i) {
                if (r.ok()) {
                  Answer((*batch)[i], std::move(*r->mutable_responses(static_cast<int>(i))));
                } else {
                  Answer((*batch)[i], r.status());
                }
              }
              done();
            });
      },
      &accepted);
  if (!accepted) {
    for (const PendingRun& run : *batch) {
      TriggerOutcome o;
      o.run_id = run.request.run_id();
      o.status = v1::RUN_STATUS_FAILED;
      o.message_suffix = "; not triggered: dispatcher shutting down";
      o.at = clock_.Now();
      Enqueue(std::move(o));
    }
  }
}

void Dispatcher::TriggerEach(const std::string& address,
                             std::shared_ptr<const std::vector<PendingRun>> runs,
                             std::function<void()> done) {
  if (runs->empty()) {
    done();
    return;
  }
  struct Countdown {
    std::atomic<size_t> left{0};
    std::function<void()> done;
  };
  auto countdown = std::make_shared<Countdown>();
  countdown->left = runs->size();
  countdown->done = std::move(done);
  for (size_t i = 0; i < runs->size(); ++i) {
    executors_.RunAsync(address, (*runs)[i].request, options_.run_deadline,
                        [this, runs, i, countdown](absl::StatusOr<v1::RunResponse> r) {
                          Answer((*runs)[i], r);
                          if (countdown->left.fetch_sub(1) == 1) countdown->done();
                        });
  }
}

void Dispatcher::Answer(const PendingRun& run, const absl::StatusOr<v1::RunResponse>& answer) {
  std::string label;
  TriggerOutcome o = OutcomeOf(run.request.run_id(), answer, clock_.Now(), &label);
  if (metrics_ != nullptr) metrics_->Triggered(run.strategy, label);
  Enqueue(std::move(o));
}

bool Dispatcher::IsLegacy(const std::string& address) {
  absl::MutexLock lock(&legacy_mu_);
  auto it = legacy_until_.find(address);
  if (it == legacy_until_.end()) return false;
  if (clock_.Now() < it->second) return true;
  legacy_until_.erase(it);  // Time to try RunBatch again: it may have been upgraded.
  return false;
}

void Dispatcher::MarkLegacy(const std::string& address) {
  const absl::Time now = clock_.Now();
  bool known = false;
  {
    absl::MutexLock lock(&legacy_mu_);
    if (legacy_until_.size() >= 1024) {  // Executors that went away: forget expired entries.
      for (auto it = legacy_until_.begin(); it != legacy_until_.end();) {
        if (it->second <= now) {
          legacy_until_.erase(it++);
        } else {
          ++it;
        }
      }
    }
    absl::Time& until = legacy_until_[address];
    known = until > now;
    until = now + options_.legacy_executor_ttl;
  }
  if (!known) {
    spdlog::warn(
        "executor {} does not implement RunBatch (an older SDK): one Run call per run "
        "for it for the next {}",
        address, absl::FormatDuration(options_.legacy_executor_ttl));
  }
}

void Dispatcher::Enqueue(TriggerOutcome outcome) {
  absl::MutexLock lock(&mu_);
  HoldOrQueueLocked(std::move(outcome));
}

void Dispatcher::HoldOrQueueLocked(TriggerOutcome outcome) {
  if (outcome.status != v1::RUN_STATUS_RUNNING ||
      options_.trigger_write_delay <= absl::ZeroDuration() || stopping_ ||
      held_by_run_.contains(outcome.run_id)) {
    outcomes_.push_back(std::move(outcome));
    return;
  }
  const int64_t run_id = outcome.run_id;
  const absl::Time due = outcome.at + options_.trigger_write_delay;
  held_by_run_.emplace(run_id, held_.emplace(due, std::move(outcome)));
}

void Dispatcher::ReleaseDueLocked(absl::Time now) {
  while (!held_.empty() && (stopping_ || held_.begin()->first <= now)) {
    auto first = held_.begin();
    held_by_run_.erase(first->second.run_id);
    outcomes_.push_back(std::move(first->second));
    held_.erase(first);
  }
}

std::vector<TriggerOutcome> Dispatcher::TakeHeld(const std::vector<v1::RunResult>& results) {
  std::vector<TriggerOutcome> taken;
  absl::MutexLock lock(&mu_);
  if (held_by_run_.empty()) return taken;
  for (const v1::RunResult& r : results) {
    auto it = held_by_run_.find(r.run_id());
    if (it == held_by_run_.end()) continue;
    taken.push_back(std::move(it->second->second));
    held_.erase(it->second);
    held_by_run_.erase(it);
  }
  folding_ += taken.size();
  return taken;
}

void Dispatcher::EndFold(size_t taken, std::vector<TriggerOutcome> put_back) {
  if (taken == 0) return;
  absl::MutexLock lock(&mu_);
  // Back under their first due time: an answer whose time has passed is written next.
  for (TriggerOutcome& o : put_back) HoldOrQueueLocked(std::move(o));
  folding_ -= taken;
}

void Dispatcher::WriterLoop() {
  while (true) {
    std::vector<TriggerOutcome> batch;
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        ReleaseDueLocked(clock_.Now());  // At shutdown: every held answer.
        if (!outcomes_.empty()) break;
        // Stopping and drained; a ReportResults still carrying held answers may give some
        // back, so wait for it.
        if (stopping_ && folding_ == 0) return;
        // Wait for an answer to write: a new one, the earliest held one due, one held or put
        // back due earlier than that, stop, the last carried answers settled at shutdown, or
        // WakeWriter().
        const absl::Time due = held_.empty() ? absl::InfiniteFuture() : held_.begin()->first;
        const bool was_stopping = stopping_;
        const uint64_t wakes = wakes_;
        auto ready = [this, due, was_stopping, wakes]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return !outcomes_.empty() || stopping_ != was_stopping || (stopping_ && folding_ == 0) ||
                 wakes_ != wakes || (!held_.empty() && held_.begin()->first < due);
        };
        if (due == absl::InfiniteFuture()) {
          mu_.Await(absl::Condition(&ready));
        } else {
          mu_.AwaitWithTimeout(absl::Condition(&ready), due - clock_.Now());
        }
      }
      stopping = stopping_;
      const size_t n = std::min(outcomes_.size(), options_.max_outcomes_per_write);
      batch.assign(std::make_move_iterator(outcomes_.begin()),
                   std::make_move_iterator(outcomes_.begin() + n));
      outcomes_.erase(outcomes_.begin(), outcomes_.begin() + n);
      writing_ = batch.size();
    }
    absl::StatusOr<std::vector<int64_t>> finished = store_.RecordTriggerOutcomes(batch);
    if (finished.ok()) {
      if (metrics_ != nullptr && !finished->empty()) {
        absl::flat_hash_set<int64_t> done(finished->begin(), finished->end());
        for (const TriggerOutcome& o : batch) {
          if (done.contains(o.run_id)) metrics_->RunFinished(o.status);
        }
      }
      absl::MutexLock lock(&mu_);
      writing_ = 0;
      continue;
    }
    spdlog::error("recording {} trigger answers failed: {}", batch.size(),
                  finished.status().ToString());
    absl::MutexLock lock(&mu_);
    writing_ = 0;
    if (stopping) {
      // Give up at shutdown: the runs stay PENDING until the scheduler's monitor ends them.
      spdlog::error("shutting down: dropping {} unwritten trigger answers", batch.size());
      continue;
    }
    outcomes_.insert(outcomes_.begin(), std::make_move_iterator(batch.begin()),
                     std::make_move_iterator(batch.end()));
    auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    mu_.AwaitWithTimeout(absl::Condition(&stop), options_.write_retry);
  }
}

absl::StatusOr<v1::ReportResultsResponse> Dispatcher::ReportResults(
    const v1::ReportResultsRequest& request, const AppScope& scope) {
  if (static_cast<size_t>(request.results_size()) > options_.max_results_per_call) {
    return absl::InvalidArgumentError(absl::StrCat("results: at most ",
                                                   options_.max_results_per_call, " per call, got ",
                                                   request.results_size()));
  }
  std::vector<v1::RunResult> distinct;
  distinct.reserve(request.results_size());
  absl::flat_hash_set<int64_t> seen;
  for (int i = 0; i < request.results_size(); ++i) {
    const v1::RunResult& r = request.results(i);
    if (r.run_id() <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("results[", i, "].run_id: must be positive"));
    }
    if (!IsTerminal(r.status())) {
      return absl::InvalidArgumentError(
          absl::StrCat("results[", i, "].status: run ", r.run_id(),
                       " must have a terminal status (SUCCEEDED..DISCARDED), got ",
                       v1::RunStatus_Name(r.status())));
    }
    if (seen.insert(r.run_id()).second) {
      distinct.push_back(r);
      std::string* msg = distinct.back().mutable_message();
      if (msg->size() > options_.max_result_message_bytes) {
        size_t cut = options_.max_result_message_bytes;
        // Never split a UTF-8 sequence: back up over continuation bytes.
        while (cut > 0 && (static_cast<unsigned char>((*msg)[cut]) & 0xC0) == 0x80) --cut;
        msg->resize(cut);
        msg->append(" \xE2\x80\xA6(truncated)");
      }
    }
  }
  v1::ReportResultsResponse response;
  if (distinct.empty()) return response;
  // Held trigger answers of these runs ride along with their results (one write per run).
  std::vector<TriggerOutcome> answers = TakeHeld(distinct);
  const size_t taken = answers.size();
  absl::StatusOr<std::vector<ResultRecord>> records =
      store_.RecordResults(distinct, clock_.Now(), scope, answers);
  if (!records.ok()) {
    EndFold(taken, std::move(answers));  // Nothing written: all back to the writer.
    return records.status();
  }
  if (taken > 0) {
    // An answer whose result was not recorded (duplicate, unknown, forbidden) was not
    // written either: it goes back to be written on its own.
    absl::flat_hash_set<int64_t> recorded;
    for (const ResultRecord& rec : *records) {
      if (rec.disposition == ResultDisposition::kRecorded) recorded.insert(rec.run_id);
    }
    std::vector<TriggerOutcome> put_back;
    for (TriggerOutcome& a : answers) {
      if (!recorded.contains(a.run_id)) put_back.push_back(std::move(a));
    }
    if (metrics_ != nullptr && put_back.size() < taken) {
      metrics_->TriggerAnswersFolded(taken - put_back.size());
    }
    EndFold(taken, std::move(put_back));
  }
  for (const ResultRecord& rec : *records) {
    if (rec.disposition == ResultDisposition::kForbidden) {
      spdlog::warn("result for run {} refused: its app is not on the reporting executor's token",
                   rec.run_id);
      continue;  // Not acknowledged: an executor with the right token may still report it.
    }
    response.add_acked_run_ids(rec.run_id);
    switch (rec.disposition) {
      case ResultDisposition::kRecorded:
        if (metrics_ != nullptr) {
          metrics_->Result("recorded");
          metrics_->RunFinished(rec.status);
        }
        break;
      case ResultDisposition::kDuplicate:
        if (metrics_ != nullptr) metrics_->Result("duplicate");
        break;
      case ResultDisposition::kUnknown:
        spdlog::warn("result for unknown run {}: acknowledged and dropped", rec.run_id);
        if (metrics_ != nullptr) metrics_->Result("unknown");
        break;
      case ResultDisposition::kForbidden:
        break;  // Handled above.
    }
  }
  return response;
}

}  // namespace jobwheel::dispatcher
