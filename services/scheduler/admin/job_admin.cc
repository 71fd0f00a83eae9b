#include "services/scheduler/admin/job_admin.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/base/status_macros.h"
#include "common/model/proto_enums.h"
#include "common/time/proto_time.h"
#include "services/scheduler/admin/job_validation.h"
#include "services/scheduler/admin/run_stats.h"
#include "services/scheduler/fire_plan.h"
#include "services/scheduler/schedule.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::v1::Job;
using jobwheel::v1::Run;

constexpr int kMaxNameFilterLength = 128;
constexpr int kMaxAddressLength = 255;

bool SameChildren(const google::protobuf::RepeatedField<int64_t>& a,
                  const google::protobuf::RepeatedField<int64_t>& b) {
  return std::vector<int64_t>(a.begin(), a.end()) == std::vector<int64_t>(b.begin(), b.end());
}

bool Contains(const std::vector<std::string>& apps, const std::string& app) {
  return std::find(apps.begin(), apps.end(), app) != apps.end();
}

// The due times of `current`'s schedule from its next fire time up to `now` (already past, not
// yet claimed: the job was behind) that a write moving next_fire_at to `next` cuts off; unset
// when there are none. `what` says why ("paused", "edited").
std::optional<JobWrite::CutOff> CutOffFires(const Job& current, std::optional<absl::Time> next,
                                            absl::Time now, absl::string_view what) {
  if (!current.enabled() || !current.has_next_fire_time()) return std::nullopt;
  const absl::Time first = FromProto(current.next_fire_time());
  if (first >= now || (next.has_value() && *next <= first)) return std::nullopt;
  absl::StatusOr<Schedule> schedule =
      Schedule::FromProto(current.schedule(), FromProto(current.create_time()));
  if (!schedule.ok() || schedule->fixed_delay() || !schedule->fires_on_its_own()) {
    return std::nullopt;  // A FIX_DELAY chain's next fire is not a due time of a schedule.
  }
  const DueWalk walk = WalkDueTimes(*schedule, first, next ? std::min(now, *next) : now);
  JobWrite::CutOff cut;
  cut.first = first;
  cut.trigger_type = schedule->trigger_type();
  cut.reason = absl::StrCat(MisfireRange(walk.count, first, walk.last), " skipped; the job was ",
                            what, " before they were claimed");
  return cut;
}

}  // namespace

JobAdmin::JobAdmin(JobStore& store, ExecutorClient& executors, const Clock& clock)
    : store_(store), executors_(executors), clock_(clock) {}

absl::StatusOr<JobWrite> JobAdmin::PrepareWrite(const Job& merged, const Job* current,
                                                const ChildGraphReader& read_graph, absl::Time now,
                                                const AppScope& writer) {
  const absl::Time created = current != nullptr ? FromProto(current->create_time()) : now;
  ASSIGN_OR_RETURN(Job job, NormalizeJob(merged, created));
  // Children set by an earlier writer (unchanged list) keep that writer's scope.
  const bool children_changed =
      current == nullptr || !SameChildren(current->child_job_ids(), job.child_job_ids());
  if (job.child_job_ids_size() > 0) {
    const std::vector<int64_t> ids(job.child_job_ids().begin(), job.child_job_ids().end());
    ASSIGN_OR_RETURN(ChildGraph graph, read_graph(ids));
    if (children_changed && writer.has_value()) {
      // A job of an app the writer may not operate is answered like a missing one.
      for (auto it = graph.app_of.begin(); it != graph.app_of.end(); ++it) {
        if (!Contains(*writer, it->second)) graph.existing.erase(it->first);
      }
    }
    RETURN_IF_ERROR(CheckChildGraph(current != nullptr ? current->id() : 0, job, graph));
  }
  ASSIGN_OR_RETURN(Schedule schedule, Schedule::FromProto(job.schedule(), created, "job.schedule"));

  JobWrite write;
  if (job.enabled()) write.next_fire_at = schedule.NextAfter(now);
  if (current != nullptr) {
    write.cut_off = CutOffFires(*current, write.next_fire_at, now,
                                current->enabled() && !job.enabled() ? "paused" : "edited");
  }
  const int32_t version = current != nullptr ? current->script_version() : 0;
  if (IsScript(job.glue_type()) && (current == nullptr || current->glue_type() != job.glue_type() ||
                                    current->script_source() != job.script_source())) {
    job.set_script_version(version + 1);
    write.new_script_version = true;
  } else {
    job.set_script_version(version);
  }
  *job.mutable_create_time() = ToProto(created);
  *job.mutable_update_time() = ToProto(now);
  write.job = std::move(job);
  if (children_changed) {
    write.write_child_scope = true;
    write.child_scope = writer;
  }
  return write;
}

absl::StatusOr<Job> JobAdmin::CreateJob(const Job& job, const AppScope& writer,
                                        const jobwheel::v1::AuditEvent* audit) {
  Job input = job;
  input.clear_id();  // Output only.
  const absl::Time now = clock_.Now();
  // Validate before opening a transaction; PrepareWrite repeats it with the graph.
  RETURN_IF_ERROR(NormalizeJob(input, now).status());
  return store_.CreateJob(
      [&](const Job* current,
          const ChildGraphReader& read_graph) -> absl::StatusOr<std::optional<JobWrite>> {
        ASSIGN_OR_RETURN(JobWrite write, PrepareWrite(input, current, read_graph, now, writer));
        return std::optional<JobWrite>(std::move(write));
      },
      audit);
}

absl::StatusOr<Job> JobAdmin::UpdateJob(const Job& job, const google::protobuf::FieldMask& mask,
                                        const WriteGuard& guard, const AppScope& writer,
                                        const jobwheel::v1::AuditEvent* audit) {
  RETURN_IF_ERROR(ValidateId(job.id(), "job.id"));
  // Reject a bad mask before touching the store.
  RETURN_IF_ERROR(ApplyUpdateMask(Job(), job, mask).status());
  const absl::Time now = clock_.Now();
  return store_.UpdateJob(
      job.id(),
      [&](const Job* current,
          const ChildGraphReader& read_graph) -> absl::StatusOr<std::optional<JobWrite>> {
        ASSIGN_OR_RETURN(Job merged, ApplyUpdateMask(*current, job, mask));
        merged.set_id(current->id());
        if (guard) RETURN_IF_ERROR(guard(*current, merged));
        ASSIGN_OR_RETURN(JobWrite write, PrepareWrite(merged, current, read_graph, now, writer));
        return std::optional<JobWrite>(std::move(write));
      },
      audit);
}

absl::StatusOr<Job> JobAdmin::GetJob(int64_t id) {
  RETURN_IF_ERROR(ValidateId(id, "id"));
  return store_.GetJob(id);
}

absl::StatusOr<jobwheel::v1::ListJobsResponse> JobAdmin::ListJobs(
    const jobwheel::v1::ListJobsRequest& req, const AppScope& scope) {
  ASSIGN_OR_RETURN(const int page_size, ValidatePageSize(req.page_size()));
  ASSIGN_OR_RETURN(const int64_t after, DecodePageToken(req.page_token()));
  if (req.name_contains().size() > static_cast<size_t>(kMaxNameFilterLength)) {
    return absl::InvalidArgumentError(
        absl::StrCat("name_contains: must be at most ", kMaxNameFilterLength, " bytes"));
  }
  JobFilter filter;
  filter.app = req.app();
  if (req.has_enabled()) filter.enabled = req.enabled();
  filter.name_contains = req.name_contains();
  ASSIGN_OR_RETURN(std::vector<LabelRequirement> labels, ParseLabelSelector(req.label_selector()));
  for (LabelRequirement& r : labels) {
    (r.equal ? filter.labels_equal : filter.labels_not_equal)
        .emplace_back(std::move(r.key), std::move(r.value));
  }
  filter.only_apps = scope;
  ASSIGN_OR_RETURN(std::vector<Job> jobs, store_.ListJobs(filter, after, page_size + 1));
  jobwheel::v1::ListJobsResponse resp;
  const bool more = static_cast<int>(jobs.size()) > page_size;
  if (more) jobs.resize(page_size);
  for (Job& j : jobs) *resp.add_jobs() = std::move(j);
  if (more) resp.set_next_page_token(EncodePageToken(resp.jobs(page_size - 1).id()));
  return resp;
}

absl::Status JobAdmin::DeleteJob(int64_t id, const jobwheel::v1::AuditEvent* audit) {
  RETURN_IF_ERROR(ValidateId(id, "id"));
  return store_.DeleteJob(id, audit);
}

absl::StatusOr<Job> JobAdmin::SetEnabled(int64_t id, bool enabled, const WriteGuard& guard,
                                         const jobwheel::v1::AuditEvent* audit) {
  RETURN_IF_ERROR(ValidateId(id, "id"));
  const absl::Time now = clock_.Now();
  return store_.UpdateJob(
      id,
      [&](const Job* current,
          const ChildGraphReader& read_graph) -> absl::StatusOr<std::optional<JobWrite>> {
        Job merged = *current;
        merged.set_enabled(enabled);
        if (guard) RETURN_IF_ERROR(guard(*current, merged));
        if (current->enabled() == enabled) return std::optional<JobWrite>();
        // The child list is unchanged, so its scope is kept.
        ASSIGN_OR_RETURN(JobWrite write,
                         PrepareWrite(merged, current, read_graph, now, std::nullopt));
        return std::optional<JobWrite>(std::move(write));
      },
      audit);
}

absl::StatusOr<Job> JobAdmin::PauseJob(int64_t id, const WriteGuard& guard,
                                       const jobwheel::v1::AuditEvent* audit) {
  return SetEnabled(id, false, guard, audit);
}

absl::StatusOr<Job> JobAdmin::ResumeJob(int64_t id, const WriteGuard& guard,
                                        const jobwheel::v1::AuditEvent* audit) {
  return SetEnabled(id, true, guard, audit);
}

absl::StatusOr<int64_t> JobAdmin::TriggerJob(const jobwheel::v1::TriggerJobRequest& req,
                                             const jobwheel::v1::AuditEvent* audit) {
  RETURN_IF_ERROR(ValidateId(req.id(), "id"));
  ManualFire fire;
  fire.job_id = req.id();
  if (req.has_param()) {
    if (req.param().size() > static_cast<size_t>(kMaxParamBytes)) {
      return absl::InvalidArgumentError(absl::StrCat("param: must be at most ", kMaxParamBytes,
                                                     " bytes, got ", req.param().size()));
    }
    fire.param = req.param();
  }
  ASSIGN_OR_RETURN(ShardParam shard, ParseShardParam(req.shard_param()));
  fire.shard_index = shard.index;
  fire.shard_total = shard.total;
  if (req.executor_address().size() > static_cast<size_t>(kMaxAddressLength)) {
    return absl::InvalidArgumentError(
        absl::StrCat("executor_address: must be at most ", kMaxAddressLength, " bytes"));
  }
  fire.executor_address = req.executor_address();
  return store_.InsertManualFire(fire, audit);
}

absl::StatusOr<jobwheel::v1::ListRunsResponse> JobAdmin::ListRuns(
    const jobwheel::v1::ListRunsRequest& req, const AppScope& scope) {
  ASSIGN_OR_RETURN(const int page_size, ValidatePageSize(req.page_size()));
  ASSIGN_OR_RETURN(const int64_t before, DecodePageToken(req.page_token()));
  if (req.job_id() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("job_id: must not be negative, got ", req.job_id()));
  }
  RunFilter filter;
  filter.job_id = req.job_id();
  filter.app = req.app();
  filter.only_apps = scope;
  for (int i = 0; i < req.statuses_size(); ++i) {
    const int s = req.statuses(i);
    if (!jobwheel::v1::RunStatus_IsValid(s) || s == jobwheel::v1::RUN_STATUS_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat("statuses[", i, "]: unknown run status ", s));
    }
    filter.statuses.push_back(static_cast<jobwheel::v1::RunStatus>(s));
  }
  if (req.has_start_time()) filter.triggered_from = FromProto(req.start_time());
  if (req.has_end_time()) filter.triggered_before = FromProto(req.end_time());
  if (filter.triggered_from && filter.triggered_before &&
      *filter.triggered_before <= *filter.triggered_from) {
    return absl::InvalidArgumentError("end_time: must be after start_time");
  }
  ASSIGN_OR_RETURN(std::vector<Run> runs, store_.ListRuns(filter, before, page_size + 1));
  jobwheel::v1::ListRunsResponse resp;
  const bool more = static_cast<int>(runs.size()) > page_size;
  if (more) runs.resize(page_size);
  for (Run& r : runs) *resp.add_runs() = std::move(r);
  if (more) resp.set_next_page_token(EncodePageToken(resp.runs(page_size - 1).id()));
  return resp;
}

absl::StatusOr<Run> JobAdmin::GetRun(int64_t id) {
  RETURN_IF_ERROR(ValidateId(id, "id"));
  return store_.GetRun(id);
}

absl::StatusOr<Run> JobAdmin::KillRun(int64_t id, const jobwheel::v1::AuditEvent* audit) {
  RETURN_IF_ERROR(ValidateId(id, "id"));
  ASSIGN_OR_RETURN(Run run, store_.GetRun(id));
  if (!IsOpen(run.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", id, " is already ", RunStatusShortName(run.status())));
  }
  std::string unreachable;
  if (run.executor_address().empty()) {
    unreachable = "the run has no executor assigned";
  } else {
    ASSIGN_OR_RETURN(ExecutorState state,
                     store_.GetExecutorState(run.app(), run.executor_address()));
    if (state == ExecutorState::kUnknown) {
      // Never call an address that is not a registered executor of the app.
      unreachable =
          absl::StrCat(run.executor_address(), " is not a registered executor of app ", run.app());
    } else if (state == ExecutorState::kOffline) {
      unreachable = absl::StrCat(run.executor_address(), " is offline");
    } else {
      jobwheel::v1::KillRequest kill;
      kill.set_run_id(id);
      kill.set_reason("killed by operator");
      absl::StatusOr<jobwheel::v1::KillResponse> resp =
          executors_.Kill(run.app(), run.executor_address(), kill);
      if (resp.ok() && resp->killed()) {
        if (audit != nullptr) {
          jobwheel::v1::AuditEvent e = *audit;
          e.set_target(absl::StrCat("run ", id));
          e.add_apps(run.app());
          jobwheel::v1::AuditFieldChange* c = e.add_changes();
          c->set_field("kill");
          c->set_after(absl::StrCat("accepted by executor ", run.executor_address()));
          RETURN_IF_ERROR(store_.AppendAudit(e));
        }
        // The executor reports the KILLED result through the dispatcher.
        return store_.GetRun(id);
      }
      if (resp.ok()) {
        return absl::FailedPreconditionError(
            absl::StrCat("run ", id, ": executor ", run.executor_address(),
                         " has no such run running or queued (", resp->message(),
                         "); its result may still be on its way"));
      }
      unreachable = absl::StrCat(run.executor_address(), ": ", resp.status().message());
    }
  }
  return store_.MarkRunKilled(
      id, absl::StrCat("killed by operator: executor unreachable: ", unreachable), audit);
}

absl::StatusOr<jobwheel::v1::GetRunLogResponse> JobAdmin::GetRunLog(
    const jobwheel::v1::GetRunLogRequest& req) {
  RETURN_IF_ERROR(ValidateId(req.id(), "id"));
  if (req.from_line() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("from_line: must not be negative, got ", req.from_line()));
  }
  ASSIGN_OR_RETURN(Run run, store_.GetRun(req.id()));
  if (run.executor_address().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run.id(), " was never assigned to an executor; it has no log"));
  }
  ASSIGN_OR_RETURN(ExecutorState state, store_.GetExecutorState(run.app(), run.executor_address()));
  if (state != ExecutorState::kOnline) {
    return absl::UnavailableError(absl::StrCat("executor ", run.executor_address(), " of run ",
                                               run.id(), " is offline; its log is not reachable"));
  }
  jobwheel::v1::LogRequest log_req;
  log_req.set_run_id(run.id());
  log_req.set_from_line(req.from_line() == 0 ? 1 : req.from_line());
  log_req.set_max_lines(kLogMaxLines);
  absl::StatusOr<jobwheel::v1::LogResponse> log =
      executors_.Log(run.app(), run.executor_address(), log_req);
  if (!log.ok()) {
    return absl::Status(log.status().code(),
                        absl::StrCat("run ", run.id(), ": log from executor ",
                                     run.executor_address(), ": ", log.status().message()));
  }
  jobwheel::v1::GetRunLogResponse resp;
  for (const std::string& line : log->lines()) resp.add_lines(line);
  resp.set_from_line(log->from_line());
  resp.set_to_line(log->to_line());
  // A finished run's log is complete once a read comes back short of a full page.
  resp.set_end(log->end() || (!IsOpen(run.status()) && log->lines_size() < kLogMaxLines));
  return resp;
}

absl::StatusOr<jobwheel::v1::PreviewFireTimesResponse> JobAdmin::PreviewFireTimes(
    const jobwheel::v1::PreviewFireTimesRequest& req) {
  if (!req.has_schedule()) return absl::InvalidArgumentError("schedule: must be set");
  const absl::Time now = clock_.Now();
  ASSIGN_OR_RETURN(Schedule schedule, Schedule::FromProto(req.schedule(), now, "schedule"));
  const absl::Time after = req.has_after() ? FromProto(req.after()) : now;
  int count = req.count();
  if (count == 0) count = kDefaultPreviewCount;
  if (count < 1 || count > kMaxPreviewCount) {
    return absl::InvalidArgumentError(
        absl::StrCat("count: must be between 1 and ", kMaxPreviewCount, ", got ", req.count()));
  }
  jobwheel::v1::PreviewFireTimesResponse resp;
  for (absl::Time t : schedule.Preview(after, count)) *resp.add_fire_times() = ToProto(t);
  resp.set_summary(schedule.Describe());
  return resp;
}

absl::StatusOr<jobwheel::v1::GetRunStatsResponse> JobAdmin::GetRunStats(
    const jobwheel::v1::GetRunStatsRequest& req, const AppScope& scope) {
  ASSIGN_OR_RETURN(RunStatsQuery query, ResolveRunStatsQuery(req, clock_.Now()));
  query.only_apps = scope;
  ASSIGN_OR_RETURN(RunStatsRows rows, store_.RunStats(query));
  return BuildRunStatsResponse(query, rows);
}

absl::StatusOr<jobwheel::v1::CountJobsResponse> JobAdmin::CountJobs(
    const jobwheel::v1::CountJobsRequest& req, const AppScope& scope) {
  if (req.app().size() > static_cast<size_t>(kMaxAppLength)) {
    return absl::InvalidArgumentError(
        absl::StrCat("app: must be at most ", kMaxAppLength, " characters"));
  }
  ASSIGN_OR_RETURN(std::vector<AppJobCountsRow> rows, store_.CountJobs(req.app(), scope));
  jobwheel::v1::CountJobsResponse resp;
  for (const AppJobCountsRow& row : rows) {
    jobwheel::v1::AppJobCounts* c = resp.add_apps();
    c->set_app(row.app);
    c->set_job_count(row.jobs);
    c->set_enabled_job_count(row.enabled_jobs);
    c->set_pending_run_count(row.pending_runs);
    c->set_running_run_count(row.running_runs);
  }
  return resp;
}

absl::StatusOr<jobwheel::v1::ListAuditEventsResponse> JobAdmin::ListAuditEvents(
    const jobwheel::v1::ListAuditEventsRequest& req, const AppScope& scope) {
  ASSIGN_OR_RETURN(const int page_size, ValidatePageSize(req.page_size()));
  ASSIGN_OR_RETURN(const int64_t before, DecodePageToken(req.page_token()));
  AuditFilter filter;
  const std::pair<const std::string*, const char*> texts[] = {
      {&req.actor(), "actor"}, {&req.target(), "target"}, {&req.action(), "action"}};
  for (const auto& [value, field] : texts) {
    if (value->size() > static_cast<size_t>(kMaxNameLength)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": must be at most ", kMaxNameLength, " bytes"));
    }
  }
  filter.actor = req.actor();
  filter.target = req.target();
  filter.action = req.action();
  filter.only_apps = scope;
  if (req.has_start_time()) filter.from = FromProto(req.start_time());
  if (req.has_end_time()) filter.before = FromProto(req.end_time());
  if (filter.from && filter.before && *filter.before <= *filter.from) {
    return absl::InvalidArgumentError("end_time: must be after start_time");
  }
  ASSIGN_OR_RETURN(std::vector<jobwheel::v1::AuditEvent> events,
                   store_.ListAuditEvents(filter, before, page_size + 1));
  jobwheel::v1::ListAuditEventsResponse resp;
  const bool more = static_cast<int>(events.size()) > page_size;
  if (more) events.resize(page_size);
  for (auto& e : events) *resp.add_events() = std::move(e);
  if (more) resp.set_next_page_token(EncodePageToken(resp.events(page_size - 1).id()));
  return resp;
}

}  // namespace jobwheel::scheduler::admin
