#include "services/scheduler/fake_fire_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"

namespace jobwheel::scheduler {
namespace {

using jobwheel::v1::Fire;
using jobwheel::v1::Job;

bool ScheduleDriven(jobwheel::v1::TriggerType t) {
  return t == jobwheel::v1::TRIGGER_TYPE_CRON || t == jobwheel::v1::TRIGGER_TYPE_FIX_RATE ||
         t == jobwheel::v1::TRIGGER_TYPE_MISFIRE;
}

// The label as the SQL reads it: '^[0-9]{1,18}$', else absent.
std::optional<int64_t> ProcessStartMicros(const std::optional<std::string>& label) {
  if (!label || label->empty() || label->size() > 18) return std::nullopt;
  for (char c : *label) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  int64_t v = 0;
  if (!absl::SimpleAtoi(*label, &v)) return std::nullopt;
  return v;
}

}  // namespace

void FakeFireStore::SetLeader(bool leader, int64_t epoch) {
  absl::MutexLock lock(&mu_);
  leader_ = leader;
  epoch_ = epoch;
}

void FakeFireStore::FailNext(absl::Status status) {
  absl::MutexLock lock(&mu_);
  fail_next_ = std::move(status);
  fail_next_what_.clear();
}

void FakeFireStore::FailNextOf(std::string what, absl::Status status) {
  absl::MutexLock lock(&mu_);
  fail_next_ = std::move(status);
  fail_next_what_ = std::move(what);
}

int FakeFireStore::operations() const {
  absl::MutexLock lock(&mu_);
  return operations_;
}

bool FakeFireStore::IsLeader() const {
  absl::MutexLock lock(&mu_);
  return leader_;
}

void FakeFireStore::OnNextOperation(std::function<void()> hook) {
  absl::MutexLock lock(&mu_);
  next_hook_ = std::move(hook);
}

absl::Status FakeFireStore::Begin(absl::string_view what) {
  ++operations_;
  if (next_hook_) {
    std::function<void()> hook = std::move(next_hook_);
    next_hook_ = nullptr;
    hook();  // Under the store's lock, as a fenced transaction would be open.
  }
  if (!leader_) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": this replica is not the leader"));
  }
  if (!fail_next_what_.empty() && fail_next_what_ != what) return absl::OkStatus();
  absl::Status s = std::move(fail_next_);
  fail_next_ = absl::OkStatus();
  fail_next_what_.clear();
  return s;
}

int64_t FakeFireStore::AddJob(Job job, std::optional<std::vector<std::string>> child_scope) {
  absl::MutexLock lock(&mu_);
  if (job.id() == 0) job.set_id(next_id_++);
  if (!job.has_create_time()) *job.mutable_create_time() = ToProto(clock_.Now());
  const int64_t id = job.id();
  jobs_[id] = JobRow{std::move(job), std::move(child_scope)};
  return id;
}

void FakeFireStore::UpdateJob(int64_t id, const std::function<void(Job&)>& edit) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it != jobs_.end()) edit(it->second.job);
}

void FakeFireStore::DeleteJob(int64_t id) {
  absl::MutexLock lock(&mu_);
  jobs_.erase(id);
}

std::optional<Job> FakeFireStore::job(int64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second.job;
}

int64_t FakeFireStore::InsertFire(FireRow fire) {
  for (const auto& [id, f] : fires_) {
    if (ScheduleDriven(fire.trigger_type) && ScheduleDriven(f.trigger_type) &&
        f.job_id == fire.job_id && f.scheduled == fire.scheduled) {
      return 0;  // fires_schedule_once
    }
    if (fire.parent_run_id && f.parent_run_id == fire.parent_run_id && f.job_id == fire.job_id) {
      return 0;  // fires_followup_once
    }
  }
  fire.id = next_id_++;
  fire.create_time = clock_.Now();
  const int64_t id = fire.id;
  fires_[id] = std::move(fire);
  return id;
}

int64_t FakeFireStore::AddFire(FireRow fire) {
  absl::MutexLock lock(&mu_);
  return InsertFire(std::move(fire));
}

std::vector<FakeFireStore::FireRow> FakeFireStore::fires() const {
  absl::MutexLock lock(&mu_);
  std::vector<FireRow> out;
  for (const auto& [id, f] : fires_) out.push_back(f);
  return out;
}

bool FakeFireStore::DispatchFire(int64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = fires_.find(id);
  if (it == fires_.end() || it->second.status != jobwheel::v1::FIRE_STATUS_PENDING) return false;
  it->second.status = jobwheel::v1::FIRE_STATUS_DISPATCHED;
  return true;
}

void FakeFireStore::DeleteFire(int64_t id) {
  absl::MutexLock lock(&mu_);
  fires_.erase(id);
}

int64_t FakeFireStore::AddRun(RunRow run) {
  absl::MutexLock lock(&mu_);
  run.id = next_id_++;
  const int64_t id = run.id;
  runs_[id] = std::move(run);
  return id;
}

std::vector<FakeFireStore::RunRow> FakeFireStore::runs() const {
  absl::MutexLock lock(&mu_);
  std::vector<RunRow> out;
  for (const auto& [id, r] : runs_) out.push_back(r);
  return out;
}

std::optional<FakeFireStore::RunRow> FakeFireStore::run(int64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(id);
  if (it == runs_.end()) return std::nullopt;
  return it->second;
}

void FakeFireStore::SetExecutors(std::vector<ExecutorRow> executors) {
  absl::MutexLock lock(&mu_);
  executors_ = std::move(executors);
}

absl::StatusOr<FireStore::ClaimResult> FakeFireStore::ClaimDueJobs(absl::Time horizon, int limit,
                                                                   const ClaimPlanner& plan) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Begin("claim due jobs"); !s.ok()) return s;
  std::vector<Job> due;
  for (const auto& [id, row] : jobs_) {
    if (row.job.enabled() && row.job.has_next_fire_time() &&
        FromProto(row.job.next_fire_time()) <= horizon) {
      due.push_back(row.job);
    }
  }
  std::stable_sort(due.begin(), due.end(), [](const Job& a, const Job& b) {
    return FromProto(a.next_fire_time()) < FromProto(b.next_fire_time());
  });
  if (static_cast<int>(due.size()) > limit) due.resize(limit);
  ClaimResult result;
  result.jobs = static_cast<int>(due.size());
  if (due.empty()) return result;
  const ClaimPlan& planned = plan(due);
  for (const PlannedFire& p : planned.fires) {
    FireRow f;
    f.job_id = p.job_id;
    f.scheduled = p.scheduled;
    f.trigger_type = p.trigger_type;
    f.status = p.skipped ? jobwheel::v1::FIRE_STATUS_SKIPPED : jobwheel::v1::FIRE_STATUS_PENDING;
    f.reason = p.reason;
    f.epoch = epoch_;
    const int64_t id = InsertFire(std::move(f));
    if (id == 0 || p.skipped) continue;
    Fire fire;
    fire.set_fire_id(id);
    for (const Job& j : due) {
      if (j.id() == p.job_id) *fire.mutable_job() = j;
    }
    *fire.mutable_scheduled_time() = ToProto(p.scheduled);
    fire.set_trigger_type(p.trigger_type);
    result.fires.push_back(std::move(fire));
  }
  for (const NextFire& n : planned.next) {
    auto it = jobs_.find(n.job_id);
    if (it == jobs_.end()) continue;
    if (n.next) {
      *it->second.job.mutable_next_fire_time() = ToProto(*n.next);
    } else {
      it->second.job.clear_next_fire_time();
    }
  }
  return result;
}

absl::StatusOr<FireStore::PendingPage> FakeFireStore::LoadPendingFires(const PendingCursor& after,
                                                                       bool all_types, int limit,
                                                                       const LatePlanner& late) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Begin("load pending fires"); !s.ok()) return s;
  const absl::Time now = clock_.Now();
  std::vector<FireRow*> rows;
  for (auto& [id, f] : fires_) {
    if (f.status != jobwheel::v1::FIRE_STATUS_PENDING) continue;
    if (!all_types) {
      const bool followup = f.trigger_type == jobwheel::v1::TRIGGER_TYPE_MANUAL ||
                            f.trigger_type == jobwheel::v1::TRIGGER_TYPE_RETRY ||
                            f.trigger_type == jobwheel::v1::TRIGGER_TYPE_PARENT;
      if (!followup || f.scheduled > now + absl::Seconds(1)) continue;
    }
    if (f.scheduled < after.scheduled || (f.scheduled == after.scheduled && f.id <= after.id)) {
      continue;
    }
    rows.push_back(&f);
  }
  std::sort(rows.begin(), rows.end(), [](const FireRow* a, const FireRow* b) {
    return a->scheduled < b->scheduled || (a->scheduled == b->scheduled && a->id < b->id);
  });
  if (static_cast<int>(rows.size()) > limit) rows.resize(limit);
  PendingPage page;
  page.next = after;
  page.rows = rows.size();
  if (!rows.empty()) page.next = {rows.back()->scheduled, rows.back()->id};
  for (FireRow* f : rows) {
    auto job = jobs_.find(f->job_id);
    if (job == jobs_.end()) {
      f->status = jobwheel::v1::FIRE_STATUS_FAILED;
      f->reason = "job was deleted before dispatch";
      continue;
    }
    Fire fire;
    fire.set_fire_id(f->id);
    *fire.mutable_scheduled_time() = ToProto(f->scheduled);
    fire.set_trigger_type(f->trigger_type);
    if (f->param) fire.set_param(*f->param);
    fire.set_shard_index(f->shard_index);
    fire.set_shard_total(f->shard_total);
    fire.set_executor_address(f->executor_address);
    fire.set_attempt(f->attempt);
    *fire.mutable_job() = job->second.job;
    page.fires.push_back(std::move(fire));
  }
  const LatePlan& planned = late(page.fires);
  if (planned.empty()) return page;
  ApplyLatePlan(planned);
  std::vector<Fire> kept;
  for (Fire& f : page.fires) {
    const FireRow& row = fires_.at(f.fire_id());
    if (row.status != jobwheel::v1::FIRE_STATUS_PENDING) continue;
    f.set_trigger_type(row.trigger_type);
    kept.push_back(std::move(f));
  }
  page.fires = std::move(kept);
  return page;
}

void FakeFireStore::ApplyLatePlan(const LatePlan& plan) {
  for (const LateFire& l : plan.skipped) {
    auto it = fires_.find(l.fire_id);
    if (it == fires_.end() || it->second.status != jobwheel::v1::FIRE_STATUS_PENDING) continue;
    it->second.status = jobwheel::v1::FIRE_STATUS_SKIPPED;
    it->second.reason = l.reason;
  }
  for (const LateFire& l : plan.fired_once) {
    auto it = fires_.find(l.fire_id);
    if (it == fires_.end() || it->second.status != jobwheel::v1::FIRE_STATUS_PENDING) continue;
    it->second.trigger_type = jobwheel::v1::TRIGGER_TYPE_MISFIRE;
    it->second.reason = l.reason;
  }
}

absl::StatusOr<std::vector<int64_t>> FakeFireStore::SettleLateFires(
    const std::vector<int64_t>& fire_ids, const LatePlanner& late) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Begin("settle late fires"); !s.ok()) return s;
  std::vector<int64_t> ids = fire_ids;
  std::sort(ids.begin(), ids.end());
  std::vector<Fire> fires;
  for (int64_t id : ids) {
    auto it = fires_.find(id);
    if (it == fires_.end() || it->second.status != jobwheel::v1::FIRE_STATUS_PENDING) continue;
    FireRow& f = it->second;
    auto job = jobs_.find(f.job_id);
    if (job == jobs_.end()) {
      f.status = jobwheel::v1::FIRE_STATUS_FAILED;
      f.reason = "job was deleted before dispatch";
      continue;
    }
    Fire fire;
    fire.set_fire_id(f.id);
    fire.mutable_job()->set_id(f.job_id);
    fire.mutable_job()->set_misfire_strategy(job->second.job.misfire_strategy());
    *fire.mutable_scheduled_time() = ToProto(f.scheduled);
    fire.set_trigger_type(f.trigger_type);
    fires.push_back(std::move(fire));
  }
  const LatePlan& planned = late(fires);
  ApplyLatePlan(planned);
  std::vector<int64_t> pending;
  for (const Fire& f : fires) {
    if (fires_.at(f.fire_id()).status == jobwheel::v1::FIRE_STATUS_PENDING) {
      pending.push_back(f.fire_id());
    }
  }
  return pending;
}

FakeAlarmOutbox& FakeFireStore::alarm_outbox() {
  absl::MutexLock lock(&mu_);
  return *outbox_;
}

void FakeFireStore::SetAlarmOutbox(FakeAlarmOutbox* outbox) {
  absl::MutexLock lock(&mu_);
  outbox_ = outbox == nullptr ? &own_outbox_ : outbox;
}

void FakeFireStore::EndLostRuns(const MonitorLimits& limits, MonitorResult& result) {
  const absl::Time now = clock_.Now();
  auto row_of = [&](const RunRow& r) -> const ExecutorRow* {
    for (const ExecutorRow& e : executors_) {
      if (e.app == r.app && e.address == r.executor_address) return &e;
    }
    return nullptr;
  };
  auto lose = [&](RunRow& r, LostReason reason, std::optional<absl::Duration> after_offline) {
    r.status = jobwheel::v1::RUN_STATUS_LOST;
    r.end_time = now;
    r.result_message =
        absl::StrCat("executor ", r.executor_address,
                     reason == LostReason::kExecutorOffline ? " went offline" : " restarted",
                     " while the run was RUNNING");
    result.lost_runs.push_back({r.id, r.app, r.executor_address, reason, after_offline});
  };
  for (auto& [id, r] : runs_) {  // Offline at least the grace ago.
    if (r.status != jobwheel::v1::RUN_STATUS_RUNNING) continue;
    const ExecutorRow* e = row_of(r);
    if (e == nullptr || e->online || !e->offline_since ||
        *e->offline_since > now - limits.offline_grace) {
      continue;
    }
    lose(r, LostReason::kExecutorOffline, now - *e->offline_since);
  }
  for (auto& [id, r] : runs_) {  // Offline since an unknown time: the long limit.
    if (r.status != jobwheel::v1::RUN_STATUS_RUNNING || !r.start_time ||
        *r.start_time >= limits.lost_started_before) {
      continue;
    }
    const ExecutorRow* e = row_of(r);
    if (e != nullptr && (e->online || e->offline_since)) continue;
    lose(r, LostReason::kExecutorOffline, std::nullopt);
  }
  for (auto& [id, r] : runs_) {  // Restarted: another process registered after the run started.
    if (r.status != jobwheel::v1::RUN_STATUS_RUNNING || !r.start_time) continue;
    const ExecutorRow* e = row_of(r);
    if (e == nullptr || !e->online || !e->instance_since ||
        *r.start_time + absl::Seconds(1) >= *e->instance_since ||
        *e->instance_since > now - limits.restart_grace) {
      continue;
    }
    lose(r, LostReason::kExecutorRestarted, std::nullopt);
  }
  for (auto& [id, r] : runs_) {  // Restarted, by the process start label.
    if (r.status != jobwheel::v1::RUN_STATUS_RUNNING || !r.start_time) continue;
    const ExecutorRow* e = row_of(r);
    if (e == nullptr || !e->online) continue;
    const std::optional<int64_t> process_start = ProcessStartMicros(e->process_start_us);
    if (!process_start || *process_start <= absl::ToUnixMicros(*r.start_time) + 1000000 ||
        *process_start >= absl::ToUnixMicros(limits.restarted_before)) {
      continue;
    }
    lose(r, LostReason::kExecutorRestarted, std::nullopt);
  }
  result.lost = static_cast<int>(result.lost_runs.size());
}

absl::StatusOr<FireStore::MonitorResult> FakeFireStore::RunMonitorPass(
    const MonitorLimits& limits, const FollowupPlanner& plan) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Begin("monitors"); !s.ok()) return s;
  const absl::Time now = clock_.Now();
  MonitorResult result;
  for (const auto& [id, row] : jobs_) {
    if (row.job.enabled()) ++result.enabled_jobs;
  }
  EndLostRuns(limits, result);
  std::vector<FinishedRun> finished;
  for (const auto& [id, r] : runs_) {
    if (static_cast<int>(finished.size()) >= limits.batch) break;
    if (r.followup_done || !IsTerminal(r.status)) continue;
    auto fire = fires_.find(r.fire_id);
    if (fire == fires_.end()) continue;  // The run's fire is gone: the join drops it.
    FinishedRun run;
    run.run_id = r.id;
    run.job_id = r.job_id;
    run.status = r.status;
    run.attempt = r.attempt;
    run.shard_index = r.shard_index;
    run.shard_total = r.shard_total;
    run.result_message = r.result_message;
    run.trigger_message = r.trigger_message;
    run.app = r.app;
    run.executor_address = r.executor_address;
    run.trigger_time = r.trigger_time;
    run.fire_param = fire->second.param;
    auto job = jobs_.find(r.job_id);
    run.job_deleted = job == jobs_.end();
    if (!run.job_deleted) {
      const Job& j = job->second.job;
      run.fail_retry_count = j.fail_retry_count();
      run.child_job_ids.assign(j.child_job_ids().begin(), j.child_job_ids().end());
      run.job_name = j.name();
      run.alarm_contacts.assign(j.alarm_contacts().begin(), j.alarm_contacts().end());
      run.routing_strategy = j.routing_strategy();
    }
    finished.push_back(std::move(run));
  }
  std::vector<Job> unscheduled;
  for (const auto& [id, row] : jobs_) {
    if (static_cast<int>(unscheduled.size()) >= limits.batch) break;
    const Job& j = row.job;
    if (!j.enabled() || j.has_next_fire_time() || !j.schedule_error().empty()) continue;
    if (!j.schedule().has_cron() && !j.schedule().has_fix_rate()) continue;
    unscheduled.push_back(j);
  }
  const FollowupPlan& planned = plan(finished, unscheduled);
  for (const RetryFire& r : planned.retries) {
    FireRow f;
    f.job_id = r.job_id;
    f.scheduled = now;
    f.trigger_type = jobwheel::v1::TRIGGER_TYPE_RETRY;
    f.param = r.param;
    f.attempt = r.attempt;
    f.parent_run_id = r.parent_run_id;
    f.shard_index = r.shard_index;
    f.shard_total = r.shard_total;
    f.epoch = epoch_;
    if (InsertFire(std::move(f)) != 0) ++result.retries;
  }
  for (const ChildFire& c : planned.children) {
    auto child = jobs_.find(c.job_id);
    auto parent = jobs_.find(c.parent_job_id);
    if (child == jobs_.end() || parent == jobs_.end()) continue;
    const std::string& app = child->second.job.app();
    const auto& scope = parent->second.child_scope;
    if (app != parent->second.job.app() && scope &&
        std::find(scope->begin(), scope->end(), app) == scope->end()) {
      continue;
    }
    FireRow f;
    f.job_id = c.job_id;
    f.scheduled = now;
    f.trigger_type = jobwheel::v1::TRIGGER_TYPE_PARENT;
    f.parent_run_id = c.parent_run_id;
    f.epoch = epoch_;
    if (InsertFire(std::move(f)) != 0) ++result.children;
  }
  for (int64_t id : planned.done) {
    auto it = runs_.find(id);
    if (it == runs_.end()) continue;
    it->second.followup_done = true;
    it->second.alarm_sent = it->second.alarm_sent || RunFailed(it->second.status);
  }
  for (const ScheduleStop& stop : planned.stops) {
    auto it = jobs_.find(stop.job_id);
    if (it == jobs_.end()) continue;
    it->second.job.set_enabled(false);
    it->second.job.clear_next_fire_time();
    it->second.job.set_schedule_error(stop.error);
    ++result.stopped_jobs;
  }
  for (const AlarmEvent& e : planned.alarms) {
    if (outbox_->Queue(e, now)) ++result.alarms_queued;
  }
  for (auto& [id, r] : runs_) {
    if (r.status != jobwheel::v1::RUN_STATUS_PENDING || r.trigger_time >= limits.pending_before) {
      continue;
    }
    r.status = jobwheel::v1::RUN_STATUS_FAILED;
    r.end_time = now;
    r.result_message =
        "trigger never completed: the dispatcher was lost before calling the executor";
    ++result.stale_pending;
  }
  return result;
}

absl::StatusOr<int> FakeFireStore::DeleteHistory(absl::Time cutoff, int limit) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Begin("retention"); !s.ok()) return s;
  int runs = 0;
  for (auto it = runs_.begin(); it != runs_.end() && runs < limit;) {
    const RunRow& r = it->second;
    if (r.trigger_time < cutoff && r.status >= jobwheel::v1::RUN_STATUS_SUCCEEDED &&
        r.followup_done) {
      it = runs_.erase(it);
      ++runs;
    } else {
      ++it;
    }
  }
  int fires = 0;
  for (auto it = fires_.begin(); it != fires_.end() && fires < limit;) {
    const FireRow& f = it->second;
    const bool referenced = std::any_of(runs_.begin(), runs_.end(),
                                        [&](const auto& r) { return r.second.fire_id == f.id; });
    if (f.create_time < cutoff && f.status != jobwheel::v1::FIRE_STATUS_PENDING && !referenced) {
      it = fires_.erase(it);
      ++fires;
    } else {
      ++it;
    }
  }
  return runs + fires;
}

absl::StatusOr<FireStore::DelayChainResult> FakeFireStore::AdvanceDelayChains(int /*limit*/) {
  return DelayChainResult();
}

absl::StatusOr<int> FakeFireStore::DeleteAuditHistory(absl::Time /*cutoff*/, int /*limit*/) {
  return 0;
}

}  // namespace jobwheel::scheduler
