#include "services/scheduler/admin/in_memory_job_store.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"
#include "services/scheduler/admin/audit_diff.h"
#include "services/scheduler/admin/run_stats.h"

namespace jobwheel::scheduler::admin {

using jobwheel::v1::Job;
using jobwheel::v1::Run;

void InMemoryJobStore::AddExecutor(const std::string& app, const std::string& address,
                                   bool online) {
  absl::MutexLock lock(&mu_);
  executors_[{app, address}] = online;
}

int64_t InMemoryJobStore::AddRun(Run run) {
  absl::MutexLock lock(&mu_);
  if (run.id() == 0) run.set_id(next_run_id_);
  next_run_id_ = std::max(next_run_id_, run.id() + 1);
  runs_[run.id()] = run;
  return run.id();
}

int64_t InMemoryJobStore::AddFire(Fire fire) {
  absl::MutexLock lock(&mu_);
  fire.id = next_fire_id_++;
  fires_[fire.id] = fire;
  return fire.id;
}

std::vector<InMemoryJobStore::Fire> InMemoryJobStore::fires() const {
  absl::MutexLock lock(&mu_);
  std::vector<Fire> out;
  for (const auto& [id, f] : fires_) out.push_back(f);
  return out;
}

std::optional<absl::Time> InMemoryJobStore::next_fire_at(int64_t job_id) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second.next_fire_at;
}

std::set<std::string> InMemoryJobStore::apps() const {
  absl::MutexLock lock(&mu_);
  return apps_;
}

std::map<std::pair<int64_t, int32_t>, std::string> InMemoryJobStore::scripts() const {
  absl::MutexLock lock(&mu_);
  return scripts_;
}

absl::StatusOr<std::optional<std::vector<std::string>>> InMemoryJobStore::child_scope(
    int64_t job_id) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return JobNotFoundError(job_id);
  return it->second.child_scope;
}

ChildGraphReader InMemoryJobStore::GraphReader() {
  return [this](const std::vector<int64_t>& ids) ABSL_NO_THREAD_SAFETY_ANALYSIS
         -> absl::StatusOr<ChildGraph> {
    ChildGraph graph;
    for (int64_t id : ids) {
      auto it = jobs_.find(id);
      if (it == jobs_.end()) continue;
      graph.existing.insert(id);
      graph.app_of[id] = it->second.job.app();
    }
    for (const auto& [id, stored] : jobs_) {
      if (stored.job.child_job_ids_size() > 0) {
        graph.children[id] = {stored.job.child_job_ids().begin(), stored.job.child_job_ids().end()};
      }
    }
    return graph;
  };
}

Job InMemoryJobStore::Apply(int64_t id, const JobWrite& write) {
  StoredJob& stored = jobs_[id];
  stored.job = write.job;
  stored.job.set_id(id);
  stored.next_fire_at = write.next_fire_at;
  if (write.write_child_scope) stored.child_scope = write.child_scope;
  if (write.next_fire_at) {
    *stored.job.mutable_next_fire_time() = ToProto(*write.next_fire_at);
  } else {
    stored.job.clear_next_fire_time();
  }
  apps_.insert(write.job.app());
  if (write.new_script_version) {
    scripts_[{id, write.job.script_version()}] = write.job.script_source();
  }
  const absl::Time now = clock_.Now();
  for (auto it = fires_.begin(); it != fires_.end();) {
    const Fire& f = it->second;
    const bool scheduled = f.trigger_type == jobwheel::v1::TRIGGER_TYPE_CRON ||
                           f.trigger_type == jobwheel::v1::TRIGGER_TYPE_FIX_RATE ||
                           f.trigger_type == jobwheel::v1::TRIGGER_TYPE_MISFIRE;
    const bool stale =
        f.scheduled_at > now || (write.next_fire_at && f.scheduled_at >= *write.next_fire_at);
    if (f.job_id == id && f.status == jobwheel::v1::FIRE_STATUS_PENDING && scheduled && stale) {
      it = fires_.erase(it);
    } else {
      ++it;
    }
  }
  if (write.cut_off.has_value()) {
    bool taken = false;  // As fires_schedule_once: one schedule-driven fire per job and time.
    for (const auto& [fid, f] : fires_) {
      taken = taken || (f.job_id == id && f.scheduled_at == write.cut_off->first);
    }
    if (!taken) {
      Fire f;
      f.id = next_fire_id_++;
      f.job_id = id;
      f.scheduled_at = write.cut_off->first;
      f.trigger_type = write.cut_off->trigger_type;
      f.status = jobwheel::v1::FIRE_STATUS_SKIPPED;
      f.reason = write.cut_off->reason;
      fires_[f.id] = f;
    }
  }
  return stored.job;
}

void InMemoryJobStore::Audit(const jobwheel::v1::AuditEvent* audit, const std::string& target,
                             const std::vector<std::string>& apps,
                             std::vector<jobwheel::v1::AuditFieldChange> changes) {
  if (audit == nullptr) return;
  jobwheel::v1::AuditEvent e = *audit;
  e.set_id(next_audit_id_++);
  *e.mutable_time() = ToProto(clock_.Now());
  e.set_target(target);
  for (const std::string& app : apps) e.add_apps(app);
  for (auto& c : changes) *e.add_changes() = std::move(c);
  audit_.push_back(std::move(e));
}

absl::StatusOr<Job> InMemoryJobStore::CreateJob(const JobMutation& prepare,
                                                const jobwheel::v1::AuditEvent* audit) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::optional<JobWrite>> w = prepare(nullptr, GraphReader());
  if (!w.ok()) return w.status();
  if (!w->has_value()) return absl::InternalError("create job: the mutation produced no row");
  const int64_t id = next_job_id_++;
  Job out = Apply(id, **w);
  Audit(audit, absl::StrCat("job ", id), {out.app()}, DiffJobs(nullptr, &out));
  return out;
}

absl::StatusOr<Job> InMemoryJobStore::UpdateJob(int64_t id, const JobMutation& mutate,
                                                const jobwheel::v1::AuditEvent* audit) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  const Job current = it->second.job;
  absl::StatusOr<std::optional<JobWrite>> w = mutate(&current, GraphReader());
  if (!w.ok()) return w.status();
  if (!w->has_value()) return current;
  Job out = Apply(id, **w);
  std::vector<std::string> apps = {current.app()};
  if (out.app() != current.app()) apps.push_back(out.app());
  Audit(audit, absl::StrCat("job ", id), apps, DiffJobs(&current, &out));
  return out;
}

absl::StatusOr<Job> InMemoryJobStore::GetJob(int64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  return it->second.job;
}

absl::StatusOr<std::vector<Job>> InMemoryJobStore::ListJobs(const JobFilter& filter,
                                                            int64_t after_id, int limit) {
  absl::MutexLock lock(&mu_);
  std::vector<Job> out;
  for (auto it = jobs_.upper_bound(after_id); it != jobs_.end(); ++it) {
    const Job& j = it->second.job;
    if (!filter.app.empty() && j.app() != filter.app) continue;
    if (filter.only_apps && std::find(filter.only_apps->begin(), filter.only_apps->end(),
                                      j.app()) == filter.only_apps->end()) {
      continue;
    }
    if (filter.enabled && j.enabled() != *filter.enabled) continue;
    if (!filter.name_contains.empty() &&
        !absl::StrContains(absl::AsciiStrToLower(j.name()),
                           absl::AsciiStrToLower(filter.name_contains))) {
      continue;
    }
    bool labels = true;
    for (const auto& [k, v] : filter.labels_equal) {
      auto l = j.labels().find(k);
      labels = labels && l != j.labels().end() && l->second == v;
    }
    for (const auto& [k, v] : filter.labels_not_equal) {
      auto l = j.labels().find(k);
      labels = labels && !(l != j.labels().end() && l->second == v);
    }
    if (!labels) continue;
    out.push_back(j);
    if (static_cast<int>(out.size()) >= limit) break;
  }
  return out;
}

absl::Status InMemoryJobStore::DeleteJob(int64_t id, const jobwheel::v1::AuditEvent* audit) {
  absl::MutexLock lock(&mu_);
  if (!jobs_.count(id)) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  std::vector<int64_t> parents;
  for (const auto& [other, stored] : jobs_) {
    for (int64_t c : stored.job.child_job_ids()) {
      if (c == id && other != id) parents.push_back(other);
    }
  }
  if (!parents.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is a child of job(s) ", absl::StrJoin(parents, ", "),
                     "; remove it from their child_job_ids first"));
  }
  const Job current = jobs_[id].job;
  jobs_.erase(id);
  Audit(audit, absl::StrCat("job ", id), {current.app()}, DiffJobs(&current, nullptr));
  for (auto it = fires_.begin(); it != fires_.end();) {
    if (it->second.job_id == id && it->second.status == jobwheel::v1::FIRE_STATUS_PENDING) {
      it = fires_.erase(it);
    } else {
      ++it;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> InMemoryJobStore::InsertManualFire(const ManualFire& fire,
                                                           const jobwheel::v1::AuditEvent* audit) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(fire.job_id);
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("job ", fire.job_id, " not found"));
  }
  const std::string& app = it->second.job.app();
  if (!fire.executor_address.empty()) {
    auto e = executors_.find({app, fire.executor_address});
    if (e == executors_.end() || !e->second) {
      return absl::FailedPreconditionError(absl::StrCat("executor_address: ", fire.executor_address,
                                                        " is not an online executor of app ", app));
    }
  }
  Fire f;
  f.id = next_fire_id_++;
  f.job_id = fire.job_id;
  f.scheduled_at = clock_.Now();
  f.trigger_type = jobwheel::v1::TRIGGER_TYPE_MANUAL;
  f.param = fire.param;
  f.shard_index = fire.shard_index;
  f.shard_total = fire.shard_total;
  f.executor_address = fire.executor_address;
  fires_[f.id] = f;
  jobwheel::v1::AuditFieldChange c;
  c.set_field("fire_id");
  c.set_after(absl::StrCat(f.id));
  Audit(audit, absl::StrCat("job ", fire.job_id), {app}, {c});
  return f.id;
}

absl::StatusOr<std::vector<Run>> InMemoryJobStore::ListRuns(const RunFilter& filter,
                                                            int64_t before_id, int limit) {
  absl::MutexLock lock(&mu_);
  std::vector<Run> out;
  for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
    const Run& r = it->second;
    if (before_id != 0 && r.id() >= before_id) continue;
    if (filter.job_id != 0 && r.job_id() != filter.job_id) continue;
    if (!filter.app.empty() && r.app() != filter.app) continue;
    if (filter.only_apps && std::find(filter.only_apps->begin(), filter.only_apps->end(),
                                      r.app()) == filter.only_apps->end()) {
      continue;
    }
    if (!filter.statuses.empty()) {
      bool match = false;
      for (auto s : filter.statuses) match = match || s == r.status();
      if (!match) continue;
    }
    const absl::Time t = FromProto(r.trigger_time());
    if (filter.triggered_from && t < *filter.triggered_from) continue;
    if (filter.triggered_before && t >= *filter.triggered_before) continue;
    out.push_back(r);
    if (static_cast<int>(out.size()) >= limit) break;
  }
  return out;
}

absl::StatusOr<Run> InMemoryJobStore::GetRun(int64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(id);
  if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("run ", id, " not found"));
  return it->second;
}

absl::StatusOr<ExecutorState> InMemoryJobStore::GetExecutorState(const std::string& app,
                                                                 const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = executors_.find({app, address});
  if (it == executors_.end()) return ExecutorState::kUnknown;
  return it->second ? ExecutorState::kOnline : ExecutorState::kOffline;
}

absl::StatusOr<Run> InMemoryJobStore::MarkRunKilled(int64_t id, const std::string& message,
                                                    const jobwheel::v1::AuditEvent* audit) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(id);
  if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("run ", id, " not found"));
  Run& r = it->second;
  if (IsOpen(r.status())) {
    r.set_status(jobwheel::v1::RUN_STATUS_KILLED);
    r.set_result_message(message);
    *r.mutable_end_time() = ToProto(clock_.Now());
    jobwheel::v1::AuditFieldChange c;
    c.set_field("status");
    c.set_after("RUN_STATUS_KILLED");
    Audit(audit, absl::StrCat("run ", id), {r.app()}, {c});
  }
  return r;
}

absl::Status InMemoryJobStore::AppendAudit(const jobwheel::v1::AuditEvent& audit) {
  absl::MutexLock lock(&mu_);
  jobwheel::v1::AuditEvent e = audit;
  e.set_id(next_audit_id_++);
  *e.mutable_time() = ToProto(clock_.Now());
  audit_.push_back(std::move(e));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<jobwheel::v1::AuditEvent>> InMemoryJobStore::ListAuditEvents(
    const AuditFilter& filter, int64_t before_id, int limit) {
  absl::MutexLock lock(&mu_);
  std::vector<jobwheel::v1::AuditEvent> out;
  for (auto it = audit_.rbegin(); it != audit_.rend(); ++it) {
    const jobwheel::v1::AuditEvent& e = *it;
    if (before_id != 0 && e.id() >= before_id) continue;
    if (!filter.actor.empty() && e.actor_name() != filter.actor) continue;
    if (!filter.target.empty() && e.target() != filter.target) continue;
    if (!filter.action.empty() && e.action() != filter.action) continue;
    const absl::Time t = FromProto(e.time());
    if ((filter.from && t < *filter.from) || (filter.before && t >= *filter.before)) continue;
    if (filter.only_apps) {
      bool any = false;
      for (const std::string& app : e.apps()) {
        any = any || std::find(filter.only_apps->begin(), filter.only_apps->end(), app) !=
                         filter.only_apps->end();
      }
      if (!any) continue;
    }
    out.push_back(e);
    if (static_cast<int>(out.size()) >= limit) break;
  }
  return out;
}

absl::StatusOr<RunStatsRows> InMemoryJobStore::RunStats(const RunStatsQuery& query) {
  absl::MutexLock lock(&mu_);
  std::map<std::pair<int64_t, int>, int64_t> counts;
  std::map<int64_t, std::vector<absl::Duration>> late;
  std::vector<absl::Duration> all_late;
  for (const auto& [id, r] : runs_) {
    const absl::Time t = FromProto(r.trigger_time());
    if (t < query.start || t >= query.end) continue;
    if (!query.app.empty() && r.app() != query.app) continue;
    if (query.job_id != 0 && r.job_id() != query.job_id) continue;
    if (query.only_apps && std::find(query.only_apps->begin(), query.only_apps->end(), r.app()) ==
                               query.only_apps->end()) {
      continue;
    }
    absl::Duration rem;
    const int64_t bucket = absl::IDivDuration(t - query.start, query.bucket, &rem);
    ++counts[{bucket, r.status()}];
    if ((r.trigger_type() == jobwheel::v1::TRIGGER_TYPE_CRON ||
         r.trigger_type() == jobwheel::v1::TRIGGER_TYPE_FIX_RATE) &&
        r.has_start_time()) {
      const absl::Duration d = absl::Trunc(
          FromProto(r.start_time()) - FromProto(r.scheduled_time()), absl::Microseconds(1));
      late[bucket].push_back(d);
      all_late.push_back(d);
    }
  }
  RunStatsRows out;
  for (const auto& [key, n] : counts) {
    out.counts.push_back({key.first, static_cast<jobwheel::v1::RunStatus>(key.second), n});
  }
  for (auto& [bucket, samples] : late) out.lateness[bucket] = SummarizeLateness(samples);
  out.overall_lateness = SummarizeLateness(std::move(all_late));
  return out;
}

absl::StatusOr<std::vector<AppJobCountsRow>> InMemoryJobStore::CountJobs(
    const std::string& app, const std::optional<std::vector<std::string>>& only_apps) {
  absl::MutexLock lock(&mu_);
  std::map<std::string, AppJobCountsRow> by_app;
  for (const std::string& a : apps_) by_app[a].app = a;
  for (const auto& [id, j] : jobs_) {
    AppJobCountsRow& c = by_app[j.job.app()];
    c.app = j.job.app();
    ++c.jobs;
    if (j.job.enabled()) ++c.enabled_jobs;
  }
  for (const auto& [id, r] : runs_) {
    if (r.status() != jobwheel::v1::RUN_STATUS_PENDING &&
        r.status() != jobwheel::v1::RUN_STATUS_RUNNING) {
      continue;
    }
    AppJobCountsRow& c = by_app[r.app()];
    c.app = r.app();
    ++(r.status() == jobwheel::v1::RUN_STATUS_PENDING ? c.pending_runs : c.running_runs);
  }
  std::vector<AppJobCountsRow> out;
  for (auto& [name, c] : by_app) {
    if (!app.empty() && name != app) continue;
    if (only_apps && std::find(only_apps->begin(), only_apps->end(), name) == only_apps->end()) {
      continue;
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace jobwheel::scheduler::admin
