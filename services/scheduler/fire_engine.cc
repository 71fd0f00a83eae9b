#include "services/scheduler/fire_engine.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/pg/pg_arrays.h"
#include "common/pg/pg_prepared.h"
#include "common/time/proto_time.h"
#include "services/scheduler/job_row.h"
#include "services/scheduler/schedule.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {
namespace {

using jobwheel::v1::Fire;
using jobwheel::v1::Job;

constexpr int kFirePending = 1;
constexpr int kFireSkipped = 3;
constexpr int kFireFailed = 4;
// How many missed fire times a misfire counts before giving up counting.
constexpr int kMaxMissedCounted = 100000;

constexpr char kPendingFiresSql[] =
    "SELECT f.id, f.job_id, (EXTRACT(EPOCH FROM f.scheduled_at) * 1000000)::BIGINT, "
    "f.trigger_type, f.param, f.shard_index, f.shard_total, f.executor_address, f.attempt, "
    "j.id IS NULL, ";

}  // namespace

FireEngine::FireEngine(Options options, LeaderElector& elector, DispatchClient& dispatcher,
                       const Clock& clock, SchedulerMetrics& metrics)
    : options_(options),
      elector_(elector),
      dispatcher_(dispatcher),
      clock_(clock),
      metrics_(metrics) {}

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
  stop_.Notify();
  timer_.WakeUp();
  {
    absl::MutexLock lock(&mu_);
    active_ = false;
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
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
  {
    absl::MutexLock lock(&mu_);
    active_ = true;
    load_due_epoch_ = 0;
    fires_.clear();
    retries_.clear();
    ready_.clear();
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
  {
    absl::MutexLock lock(&mu_);
    active_ = false;
    load_due_epoch_ = 0;
    fires_.clear();
    retries_.clear();
    ready_.clear();
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
  timer_.Add(id, HandOffTime(due));
}

absl::Time FireEngine::HandOffTime(absl::Time scheduled) const {
  const absl::Time at = scheduled - options_.dispatch_lead;
  if (options_.dispatch_lead <= absl::ZeroDuration() ||
      options_.handoff_interval <= absl::ZeroDuration()) {
    return at;
  }
  return absl::UnixEpoch() + absl::Floor(at - absl::UnixEpoch(), options_.handoff_interval);
}

absl::StatusOr<int> FireEngine::ClaimOnce() {
  const absl::Time now = clock_.Now();
  const absl::Time horizon = now + options_.preread_window;
  const absl::Time fill_until = horizon + options_.claim_ahead;
  std::vector<Fire> claimed;
  struct Misfire {
    jobwheel::v1::MisfireStrategy strategy;
    int64_t count;
  };
  std::vector<Misfire> misfires;
  int jobs_claimed = 0;
  const absl::Time start = absl::Now();
  const int64_t epoch = elector_.epoch();  // Not inside RunFenced: it holds the elector's lock.
  absl::Status s = elector_.RunFenced("claim due jobs", [&](pqxx::work& tx) {
    claimed.clear();
    misfires.clear();
    pqxx::result rows = ExecPrepared(
        tx, "claim_jobs",
        absl::StrCat("SELECT ", kJobColumns,
                     " FROM jobs j WHERE j.enabled AND j.next_fire_at IS NOT NULL AND "
                     "j.next_fire_at <= $1::timestamptz ORDER BY j.next_fire_at LIMIT $2 "
                     "FOR UPDATE SKIP LOCKED"),
        ToPgTimestamp(horizon), options_.claim_batch);
    jobs_claimed = static_cast<int>(rows.size());
    if (rows.empty()) return;
    std::vector<int64_t> f_job;
    std::vector<std::optional<absl::Time>> f_time;
    std::vector<int> f_type, f_status;
    std::vector<std::string> f_reason;
    std::vector<int64_t> n_job;
    std::vector<std::optional<absl::Time>> n_time;
    absl::flat_hash_map<int64_t, Job> jobs;
    for (const pqxx::row& row : rows) {
      Job job = JobFromRow(row);
      auto schedule = Schedule::FromProto(job.schedule(), FromProto(job.create_time()));
      n_job.push_back(job.id());
      if (!schedule.ok()) {
        spdlog::error("job {}: stored schedule is invalid, not firing: {}", job.id(),
                      schedule.status().ToString());
        n_time.push_back(std::nullopt);
        continue;
      }
      const int type = schedule->trigger_type();
      std::optional<absl::Time> t = FromProto(job.next_fire_time());
      // Misfire: the due times older than the threshold.
      if (t && *t < now - options_.misfire_threshold) {
        const absl::Time first = *t;
        absl::Time last = *t;
        int64_t missed = 0;
        while (t && *t < now - options_.misfire_threshold && missed < kMaxMissedCounted) {
          last = *t;
          ++missed;
          t = schedule->NextAfter(*t);
        }
        if (t && *t < now - options_.misfire_threshold) {
          t = schedule->NextAfter(now - options_.misfire_threshold - absl::Seconds(1));
        }
        const bool once = job.misfire_strategy() == jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW;
        misfires.push_back({job.misfire_strategy(), missed});
        f_job.push_back(job.id());
        f_time.push_back(first);
        f_type.push_back(once ? jobwheel::v1::TRIGGER_TYPE_MISFIRE : type);
        f_status.push_back(once ? kFirePending : kFireSkipped);
        f_reason.push_back(absl::StrCat(
            "misfire: ", missed, " fire(s) from ", absl::FormatTime(first), " to ",
            absl::FormatTime(last),
            once ? " missed; fired once now (FIRE_ONCE_NOW)" : " skipped (DO_NOTHING)"));
      }
      while (t && *t <= fill_until) {
        f_job.push_back(job.id());
        f_time.push_back(*t);
        f_type.push_back(type);
        f_status.push_back(kFirePending);
        f_reason.push_back("");
        t = schedule->NextAfter(*t);
      }
      n_time.push_back(t);
      jobs.emplace(job.id(), std::move(job));
    }
    if (!f_job.empty()) {
      pqxx::result inserted = ExecPrepared(
          tx, "insert_fires",
          "INSERT INTO fires (job_id, scheduled_at, trigger_type, status, reason, leader_epoch) "
          "SELECT u.job_id, u.scheduled_at, u.trigger_type, u.status, u.reason, $6 "
          "FROM unnest($1::bigint[], $2::timestamptz[], $3::int[], $4::int[], $5::text[]) "
          "AS u(job_id, scheduled_at, trigger_type, status, reason) "
          "ON CONFLICT DO NOTHING "
          "RETURNING id, job_id, (EXTRACT(EPOCH FROM scheduled_at) * 1000000)::BIGINT, "
          "trigger_type, status",
          ToPgIntArray(f_job), ToPgTimeArray(f_time), ToPgIntArray(f_type), ToPgIntArray(f_status),
          ToPgArray(f_reason), epoch);
      for (const pqxx::row& r : inserted) {
        if (r[4].as<int>() != kFirePending) continue;
        Fire fire;
        fire.set_fire_id(r[0].as<int64_t>());
        *fire.mutable_job() = jobs[r[1].as<int64_t>()];
        *fire.mutable_scheduled_time() = ToProto(FromMicros(r[2].as<int64_t>()));
        fire.set_trigger_type(static_cast<jobwheel::v1::TriggerType>(r[3].as<int>()));
        claimed.push_back(std::move(fire));
      }
    }
    ExecPrepared(
        tx, "advance_jobs",
        "UPDATE jobs SET next_fire_at = u.next FROM unnest($1::bigint[], $2::timestamptz[]) "
        "AS u(id, next) WHERE jobs.id = u.id AND jobs.id = ANY($1::bigint[])",
        ToPgIntArray(n_job), ToPgTimeArray(n_time));
  });
  metrics_.DbQuery("claim", absl::Now() - start, s.ok());
  if (!s.ok()) return s;
  for (const Misfire& m : misfires) metrics_.Misfires(m.strategy, m.count);
  for (Fire& f : claimed) Hold(std::move(f));
  return jobs_claimed;
}

absl::StatusOr<int> FireEngine::LoadPending(bool all_types) {
  // Page by (scheduled_at, id). A page's fires stay PENDING until dispatched, so re-reading
  // from the start would return the same page again: on a takeover with more pending fires
  // than one page (e.g. 5,000 every-second jobs × the 5 s pre-read window), the rest used to
  // be stranded PENDING forever.
  std::string after_time = "-infinity";
  int64_t after_id = 0;
  int added = 0;
  while (true) {
    std::vector<Fire> loaded;
    std::vector<int64_t> orphans;
    size_t page = 0;
    const absl::Time start = absl::Now();
    absl::Status s = elector_.RunFenced("load pending fires", [&](pqxx::work& tx) {
      loaded.clear();
      orphans.clear();
      pqxx::result rows = tx.exec_params(
          absl::StrCat(kPendingFiresSql, kJobColumns,
                       " FROM fires f LEFT JOIN jobs j ON j.id = f.job_id WHERE f.status = 1",
                       // Manual, retry and child fires are written due now(): the periodic
                       // pick-up need not walk the whole pre-read window of pending fires.
                       all_types ? ""
                                 : " AND f.trigger_type IN (3, 5, 6) AND "
                                   "f.scheduled_at <= now() + interval '1 second'",
                       " AND (f.scheduled_at, f.id) > ($1::timestamptz, $2) "
                       "ORDER BY f.scheduled_at, f.id LIMIT $3"),
          after_time, after_id, options_.load_batch);
      page = rows.size();
      if (!rows.empty()) {
        const pqxx::row last = rows[rows.size() - 1];
        after_time = ToPgTimestamp(FromMicros(last[2].as<int64_t>()));
        after_id = last[0].as<int64_t>();
      }
      for (const pqxx::row& r : rows) {
        const int64_t id = r[0].as<int64_t>();
        if (r[9].as<bool>()) {
          orphans.push_back(id);
          continue;
        }
        Fire fire;
        fire.set_fire_id(id);
        *fire.mutable_scheduled_time() = ToProto(FromMicros(r[2].as<int64_t>()));
        fire.set_trigger_type(static_cast<jobwheel::v1::TriggerType>(r[3].as<int>()));
        if (!r[4].is_null()) fire.set_param(r[4].as<std::string>());
        fire.set_shard_index(r[5].as<int>());
        fire.set_shard_total(r[6].as<int>());
        fire.set_executor_address(r[7].as<std::string>());
        fire.set_attempt(r[8].as<int>());
        *fire.mutable_job() = JobFromRow(r, 10);
        loaded.push_back(std::move(fire));
      }
      if (!orphans.empty()) {
        tx.exec_params(
            "UPDATE fires SET status = 4, reason = 'job was deleted before dispatch', "
            "dispatch_time = now() WHERE id = ANY($1::bigint[]) AND status = 1",
            ToPgIntArray(orphans));
      }
    });
    metrics_.DbQuery("load_pending", absl::Now() - start, s.ok());
    if (!s.ok()) return s;
    for (Fire& f : loaded) {
      bool known;
      {
        absl::MutexLock lock(&mu_);
        known = fires_.contains(f.fire_id());
      }
      if (known) continue;
      Hold(std::move(f));
      ++added;
    }
    if (page < static_cast<size_t>(options_.load_batch)) return added;
  }
}

void FireEngine::ClaimLoop() {
  absl::Time last_manual = absl::InfinitePast();
  while (!stop_.HasBeenNotified()) {
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
      if (absl::Now() - last_manual >= options_.claim_interval) {
        last_manual = absl::Now();
        auto m = LoadPending(/*all_types=*/false);
        if (!m.ok() && m.status().code() != absl::StatusCode::kFailedPrecondition) {
          spdlog::warn("pick up manual fires: {}", m.status().ToString());
        }
      }
      metrics_.wheel_entries.Set(static_cast<double>(timer_.size()));
      // A full batch means more jobs are due: claim again at once.
      if (n.ok() && *n >= options_.claim_batch) continue;
    }
    stop_.WaitForNotificationWithTimeout(options_.claim_interval);
  }
}

void FireEngine::HandOffLoop() {
  while (!stop_.HasBeenNotified()) {
    std::vector<int64_t> due =
        timer_.WaitDue([this] { return clock_.Now(); }, options_.dispatch_batch);
    if (due.empty()) continue;
    absl::MutexLock lock(&mu_);
    if (!active_) continue;
    ready_.push_back(std::move(due));
  }
}

void FireEngine::DispatchLoop() {
  while (!stop_.HasBeenNotified()) {
    std::vector<int64_t> batch;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !ready_.empty(); };
      mu_.AwaitWithTimeout(absl::Condition(&has_work), absl::Milliseconds(100));
      if (ready_.empty()) continue;
      batch = std::move(ready_.front());
      ready_.pop_front();
      // Whatever else is due rides along: under load one transaction carries many fires
      // instead of many transactions queueing behind each other.
      const size_t max = static_cast<size_t>(options_.dispatch_batch);
      while (!ready_.empty() && batch.size() + ready_.front().size() <= max) {
        batch.insert(batch.end(), ready_.front().begin(), ready_.front().end());
        ready_.pop_front();
      }
    }
    DispatchBatch(std::move(batch));
  }
}

void FireEngine::Requeue(const std::vector<int64_t>& ids) {
  std::vector<std::pair<int64_t, absl::Duration>> requeue;
  {
    absl::MutexLock lock(&mu_);
    if (!active_) return;
    for (int64_t id : ids) {
      if (!fires_.contains(id)) continue;  // Dropped meanwhile (edit, or a new term).
      int& n = retries_[id];
      n = std::min(n + 1, 5);
      requeue.emplace_back(id, absl::Milliseconds(100) * (1 << (n - 1)));
    }
  }
  // Same ids again: the fire rows stay PENDING until a dispatcher takes them.
  for (const auto& [id, backoff] : requeue) timer_.Add(id, clock_.Now() + backoff);
}

void FireEngine::DispatchBatch(std::vector<int64_t> ids) {
  // Only while this replica leads. Fires that an edit, pause or delete removed meanwhile are
  // not looked up first: the dispatcher locks each fire row and creates runs only for a
  // PENDING one, and answers not_found for a row that is gone (one round trip fewer per batch).
  const absl::Time start = absl::Now();
  if (!elector_.is_leader()) {
    // Deposed: the next leader loads them from the table (Requeue does nothing when inactive).
    Requeue(ids);
    return;
  }
  jobwheel::v1::DispatchRequest request;
  {
    absl::MutexLock lock(&mu_);
    for (int64_t id : ids) {
      auto it = fires_.find(id);
      if (it == fires_.end()) continue;  // Dropped meanwhile (a new term).
      // Moved, not copied (the entry stays until the answer): a fire is in one batch at once.
      request.add_fires()->Swap(&it->second);
    }
  }
  if (request.fires().empty()) return;
  const absl::Time sent = clock_.Now();
  auto response = dispatcher_.Dispatch(request);
  metrics_.DispatchLatency(absl::Now() - start);
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
  for (const Fire& f : request.fires()) {
    // A fire removed by an edit, pause or delete is dropped, not counted as handed off.
    if (!removed.contains(f.fire_id())) {
      // Schedule-driven fires were due for hand-off `dispatch_lead` ahead; manual, retry,
      // child and misfire fires are written due now and handed off as soon as they are seen.
      const bool scheduled = f.trigger_type() == jobwheel::v1::TRIGGER_TYPE_CRON ||
                             f.trigger_type() == jobwheel::v1::TRIGGER_TYPE_FIX_RATE;
      const absl::Time due = FromProto(f.scheduled_time());
      metrics_.FireHandedOff(f.trigger_type(), dispatched[f.fire_id()],
                             sent - (scheduled ? HandOffTime(due) : due));
    }
    fires_.erase(f.fire_id());
    retries_.erase(f.fire_id());
  }
}

}  // namespace jobwheel::scheduler
