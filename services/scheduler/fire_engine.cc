#include "services/scheduler/fire_engine.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/time/proto_time.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {
namespace {

using jobwheel::v1::Fire;
using jobwheel::v1::Job;

}  // namespace

FireEngine::FireEngine(Options options, FireStore& store, DispatchClient& dispatcher, Clock& clock,
                       SchedulerMetrics& metrics)
    : options_(options),
      store_(store),
      dispatcher_(dispatcher),
      clock_(clock),
      metrics_(metrics),
      coverage_(options.misfire_threshold),
      pacer_([&] {
        AdmissionPacer::Options a = options.admission;
        a.window = options.preread_window + options.claim_ahead;
        return a;
      }()) {}

FireEngine::~FireEngine() { Shutdown(); }

void FireEngine::Start() {
  threads_.emplace_back([this] { ClaimLoop(); });
  threads_.emplace_back([this] { HandOffLoop(); });
  for (int i = 0; i < options_.dispatch_threads; ++i) {
    threads_.emplace_back([this] { DispatchLoop(); });
  }
}

void FireEngine::Shutdown() {
  if (threads_.empty()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    active_ = false;
  }
  timer_.Stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

bool FireEngine::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool FireEngine::active() const {
  absl::MutexLock lock(&mu_);
  return active_;
}

size_t FireEngine::held() const {
  absl::MutexLock lock(&mu_);
  return fires_.size();
}

void FireEngine::OnElected(int64_t epoch) {
  coverage_.NewTerm();
  {
    absl::MutexLock lock(&mu_);
    active_ = true;
    load_due_epoch_ = 0;
    fires_.clear();
    retries_.clear();
    ready_.clear();
    pacer_.Reset();
  }
  timer_.Clear();
  metrics_.is_leader.Set(1);
  metrics_.leader_changes.Increment();
  // Committed fires of the previous leader that never reached a dispatcher go first.
  auto loaded = LoadPending(/*all_types=*/true);
  if (loaded.ok()) {
    spdlog::info("epoch {}: took over {} pending fires", epoch, *loaded);
  } else {
    // Nothing else loads the previous leader's CRON/FIX_RATE fires: without a retry they would
    // stay PENDING forever. The claim loop retries until it succeeds (or we are deposed).
    spdlog::warn("epoch {}: loading pending fires: {}; retrying", epoch,
                 loaded.status().ToString());
    absl::MutexLock lock(&mu_);
    if (active_) load_due_epoch_ = epoch;
  }
}

void FireEngine::OnDeposed() {
  coverage_.NewTerm();
  {
    absl::MutexLock lock(&mu_);
    active_ = false;
    load_due_epoch_ = 0;
    fires_.clear();
    retries_.clear();
    ready_.clear();
    pacer_.Reset();
  }
  timer_.Clear();
  metrics_.is_leader.Set(0);
  metrics_.wheel_entries.Set(0);
}

void FireEngine::Hold(Fire fire) {
  // A dispatcher routes and runs with these of the job's fields; only they are held for the
  // pre-read window and sent with every fire (schedule, description, owner, alarm contacts,
  // child jobs, times, and any field Job gains later, stay behind).
  Job* job = fire.mutable_job();
  Job kept;
  kept.set_id(job->id());
  kept.set_app(std::move(*job->mutable_app()));
  kept.set_routing_strategy(job->routing_strategy());
  kept.set_block_strategy(job->block_strategy());
  kept.set_handler(std::move(*job->mutable_handler()));
  kept.set_param(std::move(*job->mutable_param()));
  if (job->has_timeout()) *kept.mutable_timeout() = job->timeout();
  kept.set_glue_type(job->glue_type());
  kept.set_script_source(std::move(*job->mutable_script_source()));
  kept.set_script_version(job->script_version());
  *job = std::move(kept);
  const int64_t id = fire.fire_id();
  const absl::Time due = FromProto(fire.scheduled_time());
  {
    absl::MutexLock lock(&mu_);
    if (!active_) return;
    if (!fires_.emplace(id, std::move(fire)).second) return;
  }
  timer_.Add(id, HandOffAt(due));
}

absl::Time FireEngine::HandOffAt(absl::Time scheduled) const {
  return HandOffTime(scheduled, options_.dispatch_lead, options_.handoff_interval);
}

absl::StatusOr<int> FireEngine::ClaimOnce() {
  const absl::Time now = clock_.Now();
  ClaimWindow window{options_.preread_window, options_.claim_ahead, options_.misfire_threshold};
  Admit(now, window);
  if (window.max_pending_fires <= 0 && !window.shed_past_due) {
    // At the admission rate already: what is due waits (shed once it is behind, see below).
    HeldBack(now);
    return 0;
  }
  // The decision is pure (fire_plan.h); the store makes it inside the claim transaction, on
  // the jobs it locked.
  ClaimPlan plan;
  const absl::Time start = clock_.Now();
  // One plan at a time with the late-fire plans: a FIRE_ONCE_NOW job fires once per outage,
  // whether the takeover load (late pending fires) or the claim (a next fire time long past)
  // sees the missed times first.
  absl::StatusOr<FireStore::ClaimResult> claimed =
      coverage_.Plan([&](MisfireCoverage::Ledger& ledger) {
        absl::StatusOr<FireStore::ClaimResult> result =
            store_.ClaimDueJobs(ClaimHorizon(now, window), options_.claim_batch,
                                [&](const std::vector<Job>& jobs) -> const ClaimPlan& {
                                  plan = PlanClaim(jobs, now, window, ledger.fired_once_through());
                                  return plan;
                                });
        metrics_.DbQuery("claim", clock_.Now() - start, result.ok());
        if (result.ok()) ledger.RecordClaim(plan, now);
        return result;
      });
  if (!claimed.ok()) return claimed.status();
  for (const auto& [job_id, status] : plan.invalid) {
    spdlog::error("job {}: stored schedule is invalid, not firing: {}", job_id, status.ToString());
  }
  for (const MisfireCount& m : plan.misfires) metrics_.Misfires(m.strategy, m.missed);
  if (plan.shed > 0) metrics_.fires_shed.Increment(static_cast<double>(plan.shed));
  if (plan.held_back > 0) HeldBack(now);
  for (Fire& f : claimed->fires) Hold(std::move(f));
  // Jobs left for later are not counted: a held-back claim is not a full batch.
  return claimed->jobs - static_cast<int>(plan.held_back);
}

void FireEngine::HeldBack(absl::Time now) {
  absl::MutexLock lock(&mu_);
  pacer_.OnHeldBack(now);
  metrics_.claims_held_back.Increment();
}

void FireEngine::Admit(absl::Time now, ClaimWindow& window) {
  absl::MutexLock lock(&mu_);
  // A hand-off stuck behind the ready queue tells as much as one that came late.
  if (!ready_.empty() && !ready_.front().empty()) {
    auto it = fires_.find(ready_.front().front());
    if (it != fires_.end() && it->second.fire_id() != 0) {
      pacer_.OnHandOff(
          now, 0,
          HandOffLateness(it->second.trigger_type(), FromProto(it->second.scheduled_time()), now,
                          options_.dispatch_lead, options_.handoff_interval));
    }
  }
  window.max_pending_fires = pacer_.Budget(now, static_cast<int64_t>(fires_.size()));
  window.shed_past_due = pacer_.Shedding(now);
  metrics_.admission_rate.Set(pacer_.rate());
}

absl::StatusOr<int> FireEngine::LoadPending(bool all_types) {
  // Page by (scheduled_at, id). A page's fires stay PENDING until dispatched, so re-reading
  // from the start would return the same page again: on a takeover with more pending fires
  // than one page (e.g. 5,000 every-second jobs × the 5 s pre-read window), the rest used to
  // be stranded PENDING forever.
  FireStore::PendingCursor after;
  int added = 0;
  while (true) {
    LatePlan plan;
    absl::StatusOr<FireStore::PendingPage> page =
        coverage_.Plan([&](MisfireCoverage::Ledger& ledger) {
          const absl::Time start = clock_.Now();
          absl::StatusOr<FireStore::PendingPage> result = store_.LoadPendingFires(
              after, all_types, options_.load_batch,
              [&](const std::vector<Fire>& fires) -> const LatePlan& {
                plan = PlanLateFires(fires, start, options_.misfire_threshold,
                                     ledger.fired_once_through());
                return plan;
              });
          metrics_.DbQuery("load_pending", clock_.Now() - start, result.ok());
          if (result.ok()) ledger.RecordFiredOnce(plan, start);
          return result;
        });
    if (!page.ok()) return page.status();
    for (const MisfireCount& m : plan.misfires) metrics_.Misfires(m.strategy, m.missed);
    if (!plan.empty()) {
      spdlog::info("{} pending fires were late: {} skipped, {} fired once (misfire strategy)",
                   plan.skipped.size() + plan.fired_once.size(), plan.skipped.size(),
                   plan.fired_once.size());
    }
    after = page->next;
    for (Fire& f : page->fires) {
      bool known;
      {
        absl::MutexLock lock(&mu_);
        known = fires_.contains(f.fire_id());
      }
      if (known) continue;
      Hold(std::move(f));
      ++added;
    }
    if (page->rows < static_cast<size_t>(options_.load_batch)) return added;
  }
}

void FireEngine::ClaimLoop() {
  absl::Time last_manual = absl::InfinitePast();
  while (!stopping()) {
    if (active()) {
      int64_t load_due_epoch;
      {
        absl::MutexLock lock(&mu_);
        load_due_epoch = load_due_epoch_;
      }
      if (load_due_epoch != 0) {  // The takeover load failed: retry it.
        auto loaded = LoadPending(/*all_types=*/true);
        if (loaded.ok()) {
          spdlog::info("epoch {}: took over {} pending fires", load_due_epoch, *loaded);
          absl::MutexLock lock(&mu_);
          if (load_due_epoch_ == load_due_epoch) load_due_epoch_ = 0;
        } else {
          spdlog::warn("epoch {}: loading pending fires: {}", load_due_epoch,
                       loaded.status().ToString());
        }
      }
      auto n = ClaimOnce();
      if (!n.ok() && n.status().code() != absl::StatusCode::kFailedPrecondition) {
        spdlog::warn("claim: {}", n.status().ToString());
      }
      if (clock_.Now() - last_manual >= options_.claim_interval) {
        last_manual = clock_.Now();
        auto m = LoadPending(/*all_types=*/false);
        if (!m.ok() && m.status().code() != absl::StatusCode::kFailedPrecondition) {
          spdlog::warn("pick up manual fires: {}", m.status().ToString());
        }
      }
      metrics_.wheel_entries.Set(static_cast<double>(timer_.size()));
      // A full batch means more jobs are due: claim again at once.
      if (n.ok() && *n >= options_.claim_batch) continue;
    }
    absl::MutexLock lock(&mu_);
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping_),
                             clock_.Now() + options_.claim_interval);
  }
}

void FireEngine::HandOffLoop() {
  while (!stopping()) {
    std::vector<int64_t> due = timer_.WaitDue(clock_, options_.dispatch_batch);
    if (due.empty()) continue;
    absl::MutexLock lock(&mu_);
    if (!active_) continue;
    ready_.push_back(std::move(due));
  }
}

void FireEngine::DispatchLoop() {
  while (true) {
    std::vector<int64_t> batch;
    bool stale = false;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !ready_.empty();
      };
      mu_.Await(absl::Condition(&has_work));
      if (stopping_) return;
      batch = TakeReadyLocked(clock_.Now(), &stale);
    }
    if (!stale) {
      DispatchBatch(std::move(batch), options_.misfire_threshold);
      continue;
    }
    DispatchBatch(std::move(batch), options_.shed_late_after);
    absl::MutexLock lock(&mu_);
    settling_ = false;
  }
}

bool FireEngine::FrontIsStaleLocked(absl::Time now) const {
  if (ready_.empty()) return false;
  for (int64_t id : ready_.front()) {
    auto it = fires_.find(id);
    if (it == fires_.end() || it->second.fire_id() == 0) continue;
    return IsLateFire(it->second.trigger_type(), FromProto(it->second.scheduled_time()), now,
                      options_.shed_late_after);
  }
  return false;
}

std::vector<int64_t> FireEngine::TakeReadyLocked(absl::Time now, bool* stale) {
  std::vector<int64_t> batch;
  const bool shedding = pacer_.Shedding(now);
  if (shedding && !settling_ && FrontIsStaleLocked(now)) {
    // The oldest, too late to go on time: shed in one transaction.
    settling_ = true;
    *stale = true;
    const size_t max = static_cast<size_t>(options_.settle_batch);
    while (!ready_.empty() && batch.size() < max && FrontIsStaleLocked(now)) {
      batch.insert(batch.end(), ready_.front().begin(), ready_.front().end());
      ready_.pop_front();
    }
    return batch;
  }
  // Whatever else is due rides along: under load one transaction carries many fires instead of
  // many transactions queueing behind each other. Shedding, the newest go first.
  const size_t max = static_cast<size_t>(options_.dispatch_batch);
  auto take = [&](bool newest) {
    std::vector<int64_t>& next = newest ? ready_.back() : ready_.front();
    batch.insert(batch.end(), next.begin(), next.end());
    if (newest) {
      ready_.pop_back();
    } else {
      ready_.pop_front();
    }
  };
  take(shedding);
  while (!ready_.empty() &&
         batch.size() + (shedding ? ready_.back() : ready_.front()).size() <= max) {
    take(shedding);
  }
  return batch;
}

void FireEngine::Requeue(const std::vector<int64_t>& ids) {
  std::vector<std::pair<int64_t, absl::Duration>> requeue;
  {
    absl::MutexLock lock(&mu_);
    if (!active_) return;
    for (int64_t id : ids) {
      if (!fires_.contains(id)) continue;  // Dropped meanwhile (edit, or a new term).
      int& n = retries_[id];
      n = std::min(n + 1, kMaxHandOffFailures);
      requeue.emplace_back(id, HandOffBackoff(n));
    }
  }
  // Same ids again: the fire rows stay PENDING until a dispatcher takes them.
  for (const auto& [id, backoff] : requeue) timer_.Add(id, clock_.Now() + backoff);
}

void FireEngine::CoverHeldMisfires(MisfireCoverage::Ledger& ledger, absl::Time now) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, fire] : fires_) {
    if (fire.trigger_type() != jobwheel::v1::TRIGGER_TYPE_MISFIRE) continue;
    ledger.Cover(fire.job().id(), now);
  }
}

void FireEngine::SettleLate(const std::vector<int64_t>& late, absl::Time now,
                            absl::Duration late_after, jobwheel::v1::DispatchRequest& request) {
  LatePlan plan;
  absl::StatusOr<std::vector<int64_t>> pending =
      coverage_.Plan([&](MisfireCoverage::Ledger& ledger) {
        CoverHeldMisfires(ledger, now);
        const absl::Time start = clock_.Now();
        absl::StatusOr<std::vector<int64_t>> result =
            store_.SettleLateFires(late, [&](const std::vector<Fire>& fires) -> const LatePlan& {
              plan = PlanLateFires(fires, now, late_after, ledger.fired_once_through());
              return plan;
            });
        metrics_.DbQuery("settle_late", clock_.Now() - start, result.ok());
        if (result.ok()) ledger.RecordFiredOnce(plan, now);
        return result;
      });
  if (!pending.ok()) {
    // The database is out of reach too: they stay PENDING and held, and are judged again.
    spdlog::warn("settling {} late fires failed, retrying: {}", late.size(),
                 pending.status().ToString());
    Requeue(late);
    return;
  }
  for (const MisfireCount& m : plan.misfires) metrics_.Misfires(m.strategy, m.missed);
  spdlog::info("{} fires were handed off more than {} late: {} skipped, {} fired once, {} gone",
               late.size(), absl::FormatDuration(late_after), plan.skipped.size(),
               plan.fired_once.size(), late.size() - plan.skipped.size() - pending->size());
  absl::flat_hash_set<int64_t> once;
  for (const LateFire& f : plan.fired_once) once.insert(f.fire_id);
  const absl::flat_hash_set<int64_t> still(pending->begin(), pending->end());
  absl::MutexLock lock(&mu_);
  for (int64_t id : late) {
    auto it = fires_.find(id);
    if (it == fires_.end() || it->second.fire_id() == 0) continue;  // Gone, or in flight.
    if (!still.contains(id)) {
      // Skipped, or no longer PENDING (a dispatcher took it, an edit removed it).
      fires_.erase(it);
      retries_.erase(id);
      continue;
    }
    if (once.contains(id)) it->second.set_trigger_type(jobwheel::v1::TRIGGER_TYPE_MISFIRE);
    request.add_fires()->Swap(&it->second);
  }
}

void FireEngine::DispatchBatch(std::vector<int64_t> ids, absl::Duration late_after) {
  // Only while this replica leads. Fires that an edit, pause or delete removed meanwhile are
  // not looked up first: the dispatcher locks each fire row and creates runs only for a
  // PENDING one, and answers not_found for a row that is gone (one round trip fewer per batch).
  const absl::Time start = clock_.Now();
  if (!store_.IsLeader()) {
    // Deposed: the next leader loads them from the table (Requeue does nothing when inactive).
    Requeue(ids);
    return;
  }
  jobwheel::v1::DispatchRequest request;
  // Fires more than misfire_threshold late (an outage held them back) follow their job's misfire
  // strategy first. Telling them apart is a comparison per fire: fires on time go as they are.
  const absl::Time now = clock_.Now();
  std::vector<int64_t> late;
  {
    absl::MutexLock lock(&mu_);
    for (int64_t id : ids) {
      auto it = fires_.find(id);
      // Dropped meanwhile (a new term), or moved out into a batch still in flight (a fire id
      // in two batches after a quick deposed-and-elected): never sent twice, never blank.
      if (it == fires_.end() || it->second.fire_id() == 0) continue;
      if (IsLateFire(it->second.trigger_type(), FromProto(it->second.scheduled_time()), now,
                     late_after)) {
        late.push_back(id);
        continue;
      }
      // Moved, not copied (the entry stays until the answer): a fire is in one batch at once.
      request.add_fires()->Swap(&it->second);
    }
  }
  if (!late.empty()) SettleLate(late, now, late_after, request);
  if (request.fires().empty()) return;
  const absl::Time sent = clock_.Now();
  auto response = dispatcher_.Dispatch(request);
  metrics_.DispatchLatency(clock_.Now() - start);
  if (!response.ok()) {
    spdlog::warn("dispatch of {} fires failed, retrying: {}", request.fires_size(),
                 response.status().ToString());
    std::vector<int64_t> sent_ids;
    sent_ids.reserve(request.fires_size());
    {
      absl::MutexLock lock(&mu_);
      for (Fire& f : *request.mutable_fires()) {
        sent_ids.push_back(f.fire_id());
        auto it = fires_.find(f.fire_id());
        if (it != fires_.end()) it->second.Swap(&f);  // Back for the retry.
      }
      // The fires come back out of order after their backoff: the pacer judges the trend on
      // each second's least late hand-off.
      pacer_.OnHandOffFailed(clock_.Now());
    }
    Requeue(sent_ids);
    return;
  }
  absl::flat_hash_map<int64_t, bool> dispatched;
  absl::flat_hash_set<int64_t> removed;
  for (const auto& o : response->outcomes()) {
    dispatched[o.fire_id()] = o.status() == jobwheel::v1::FIRE_STATUS_DISPATCHED;
    if (o.not_found()) removed.insert(o.fire_id());
  }
  absl::MutexLock lock(&mu_);
  absl::Duration latest = absl::ZeroDuration();
  for (const Fire& f : request.fires()) {
    // A fire removed by an edit, pause or delete is dropped, not counted as handed off.
    if (!removed.contains(f.fire_id())) {
      // Schedule-driven fires were due for hand-off `dispatch_lead` ahead; manual, retry,
      // child and misfire fires are written due now and handed off as soon as they are seen.
      const absl::Duration lateness =
          HandOffLateness(f.trigger_type(), FromProto(f.scheduled_time()), sent,
                          options_.dispatch_lead, options_.handoff_interval);
      metrics_.FireHandedOff(f.trigger_type(), dispatched[f.fire_id()], lateness);
      latest = std::max(latest, lateness);
    }
    fires_.erase(f.fire_id());
    retries_.erase(f.fire_id());
  }
  // The back-pressure: how much was handed off, how late.
  pacer_.OnHandOff(sent, request.fires_size(), latest);
}

}  // namespace jobwheel::scheduler
