#include "tools/jobwheelctl/import_commands.h"

#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/time/proto_time.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "tools/jobwheelctl/terminal_text.h"
#include "tools/jobwheelctl/xxl/xxl_import_plan.h"
#include "tools/jobwheelctl/xxl/xxl_import_report.h"
#include "tools/jobwheelctl/xxl/xxl_job_mapping.h"
#include "tools/jobwheelctl/xxl/xxl_job_reader.h"

namespace jobwheel::ctl {
namespace {

using v1::JobAdminService;
using xxl::ImportAction;
using xxl::PlannedJob;

// A data error (the file, a flag's value): the message alone, exit 2.
int BadInput(absl::string_view message) {
  std::cerr << "jobwheelctl: " << EscapeForTerminal(message) << "\n";
  return 2;
}

// Every job an import may have made, of every app the token may read (a child may be in
// another app): those labelled imported-from=xxl-job and those named "xxl-..." (imports from
// before labels), each once, all pages.
grpc::Status ListImported(CommandContext& ctx, JobAdminService::Stub& stub,
                          std::vector<v1::Job>* jobs) {
  std::set<int64_t> seen;
  for (int pass = 0; pass < 2; ++pass) {
    v1::ListJobsRequest req;
    if (pass == 0) {
      req.set_label_selector(absl::StrCat(xxl::kImportedFromLabel, "=xxl-job"));
    } else {
      req.set_name_contains("xxl-");
    }
    req.set_page_size(500);
    do {
      v1::ListJobsResponse r;
      grpc::Status s = stub.ListJobs(ctx.Rpc().get(), req, &r);
      if (!s.ok()) return s;
      for (const v1::Job& j : r.jobs()) {
        if (seen.insert(j.id()).second) jobs->push_back(j);
      }
      req.set_page_token(r.next_page_token());
    } while (!req.page_token().empty());
  }
  return grpc::Status::OK;
}

// Asks the scheduler for each new job's first fire time: a schedule it refuses (a cron it
// cannot parse) skips the job with its reason, so that a dry run shows it too.
grpc::Status CheckSchedules(CommandContext& ctx, JobAdminService::Stub& stub,
                            std::vector<PlannedJob>& plan) {
  for (PlannedJob& p : plan) {
    if (p.action != ImportAction::kCreate || p.mapped.job.schedule().has_none()) continue;
    v1::PreviewFireTimesRequest req;
    *req.mutable_schedule() = p.mapped.job.schedule();
    req.set_count(1);
    v1::PreviewFireTimesResponse r;
    grpc::Status s = stub.PreviewFireTimes(ctx.Rpc().get(), req, &r);
    if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      p.action = ImportAction::kSkip;
      p.mapped.skip = s.error_message();
      continue;
    }
    if (!s.ok()) return s;
    if (r.fire_times_size() > 0) p.next_fire = FromProto(r.fire_times(0));
  }
  return grpc::Status::OK;
}

void PrintPlan(const std::vector<PlannedJob>& plan) {
  for (const PlannedJob& p : plan) {
    std::cout << EscapeForTerminal(xxl::PlanLine(p)) << "\n";
    for (const std::string& line : xxl::PlanDetails(p)) {
      std::cout << EscapeForTerminal(line) << "\n";
    }
  }
}

// XXL id -> jobwheel id of every job imported before (in any app) and of this plan's
// jobs that exist; the ids of the skipped ones with why.
void KnownIds(const std::vector<PlannedJob>& plan, const std::vector<v1::Job>& existing,
              std::map<int64_t, int64_t>* ids, std::map<int64_t, std::string>* skipped) {
  for (const v1::Job& j : existing) {
    std::optional<int64_t> xxl_id = xxl::ImportedXxlId(j);
    if (xxl_id.has_value() && (ids->count(*xxl_id) == 0 || j.id() < ids->at(*xxl_id))) {
      (*ids)[*xxl_id] = j.id();
    }
  }
  for (const PlannedJob& p : plan) {
    if (p.action == ImportAction::kExists) (*ids)[p.mapped.xxl_id] = p.existing.id();
    if (p.action == ImportAction::kSkip) {
      (*skipped)[p.mapped.xxl_id] = "skipped";
      ids->erase(p.mapped.xxl_id);
    }
  }
}

// Pass 1 of --apply: creates the new jobs, without children. Returns the failures.
int CreateJobs(CommandContext& ctx, JobAdminService::Stub& stub, std::vector<PlannedJob>& plan,
               std::map<int64_t, int64_t>* ids, std::map<int64_t, std::string>* skipped) {
  int failed = 0;
  for (PlannedJob& p : plan) {
    if (p.action != ImportAction::kCreate) continue;
    v1::CreateJobRequest req;
    *req.mutable_job() = p.mapped.job;
    v1::CreateJobResponse r;
    grpc::Status s = stub.CreateJob(ctx.Rpc().get(), req, &r);
    if (!s.ok()) {
      ++failed;
      (*skipped)[p.mapped.xxl_id] = "its create failed";
      std::cerr << "jobwheelctl: xxl job " << p.mapped.xxl_id << ": " << s.error_code() << " "
                << EscapeForTerminal(s.error_message()) << "\n";
      continue;
    }
    p.existing = r.job();
    (*ids)[p.mapped.xxl_id] = r.job().id();
    std::cout << "created job " << r.job().id() << " (xxl job " << p.mapped.xxl_id << ")\n";
  }
  return failed;
}

// Pass 2: points every imported job's child links at the jobwheel ids (a dry run prints what
// it would set). Returns the failures; counts the jobs whose links were (or would be) set.
int SetChildren(CommandContext& ctx, JobAdminService::Stub* stub,
                const std::vector<PlannedJob>& plan, const std::map<int64_t, int64_t>& ids,
                const std::map<int64_t, std::string>& skipped, int* set) {
  int failed = 0;
  for (const PlannedJob& p : plan) {
    if (p.action == ImportAction::kSkip || skipped.count(p.mapped.xxl_id) > 0) continue;
    xxl::ChildLinks links = xxl::ResolveChildren(p, ids, skipped);
    for (const std::string& d : links.dropped) {
      std::cout << "xxl job " << p.mapped.xxl_id << ": " << EscapeForTerminal(d) << "\n";
    }
    const std::vector<int64_t> have(p.existing.child_job_ids().begin(),
                                    p.existing.child_job_ids().end());
    if (xxl::SameChildren(links.ids, have)) continue;
    ++*set;
    std::vector<std::string> names;
    for (int64_t id : links.ids) {
      names.push_back(id > 0 ? absl::StrCat("job ", id) : absl::StrCat("new (xxl job ", -id, ")"));
    }
    const std::string what = names.empty() ? "none" : absl::StrJoin(names, ", ");
    if (stub == nullptr) {
      std::cout << "xxl job " << p.mapped.xxl_id << ": children would be " << what << "\n";
      continue;
    }
    v1::UpdateJobRequest req;
    req.mutable_job()->set_id(p.existing.id());
    for (int64_t id : links.ids) req.mutable_job()->add_child_job_ids(id);
    req.mutable_update_mask()->add_paths("child_job_ids");
    v1::UpdateJobResponse r;
    grpc::Status s = stub->UpdateJob(ctx.Rpc().get(), req, &r);
    if (!s.ok()) {
      ++failed;
      std::cerr << "jobwheelctl: xxl job " << p.mapped.xxl_id << " (job " << p.existing.id()
                << "): children: " << s.error_code() << " " << EscapeForTerminal(s.error_message())
                << "\n";
      continue;
    }
    std::cout << "set children of job " << p.existing.id() << " (xxl job " << p.mapped.xxl_id
              << "): " << what << "\n";
  }
  return failed;
}

// Reads and maps the file: exit code 0 with `mapped` filled, or the error's.
int Plan(CommandContext& ctx, const std::string& file, xxl::MappingOptions& options,
         std::vector<xxl::MappedJob>* mapped) {
  std::ifstream in(file);
  if (!in) return BadInput(absl::StrCat(file, ": cannot read"));
  std::stringstream text;
  text << in.rdbuf();
  auto app_map = xxl::ParseAppMap(ctx.options().app_map);
  if (!app_map.ok()) return BadInput(app_map.status().message());
  options.app_map = *std::move(app_map);
  options.time_zone = ctx.options().time_zone;
  absl::TimeZone tz;
  if (!options.time_zone.empty() && !absl::LoadTimeZone(options.time_zone, &tz)) {
    return BadInput(absl::StrCat("--time_zone: unknown zone \"", options.time_zone, "\""));
  }
  auto jobs = xxl::ReadXxlJobs(text.str());
  if (!jobs.ok()) return BadInput(absl::StrCat(file, ": ", jobs.status().message()));
  // Every group must have an app before anything is printed or written.
  std::map<int64_t, std::vector<int64_t>> unmapped;
  std::vector<std::string> apps_of_jobs;
  for (const xxl::XxlJob& job : *jobs) {
    auto app = xxl::AppFor(job, options);
    if (!app.ok()) unmapped[job.job_group].push_back(job.id);
    apps_of_jobs.push_back(app.ok() ? *app : "");
  }
  if (!unmapped.empty()) {
    std::vector<std::string> groups;
    std::vector<std::string> flags;
    for (const auto& [group, ids] : unmapped) {
      groups.push_back(
          absl::StrCat("job_group ", group, " (xxl jobs ", absl::StrJoin(ids, ", "), ")"));
      flags.push_back(absl::StrCat(group, "=<app>"));
    }
    return BadInput(absl::StrCat(file, ": no jobwheel app for ", absl::StrJoin(groups, "; "),
                                 ": pass --app_map=", absl::StrJoin(flags, ",")));
  }
  for (size_t i = 0; i < jobs->size(); ++i) {
    mapped->push_back(xxl::MapXxlJob((*jobs)[i], apps_of_jobs[i], options));
  }
  return 0;
}

int ImportXxlJob(CommandContext& ctx) {
  if (ctx.args().size() != 1) {
    return ctx.Usage("import xxl-job: needs one FILE (jobinfo/pageList JSON or xxl_job_info TSV)");
  }
  xxl::MappingOptions options;
  std::vector<xxl::MappedJob> mapped;
  if (int code = Plan(ctx, ctx.args()[0], options, &mapped); code != 0) return code;

  auto stub = JobAdminService::NewStub(ctx.Scheduler());
  std::vector<v1::Job> existing;
  grpc::Status s = ListImported(ctx, *stub, &existing);
  if (!s.ok()) return ctx.RpcError(s);
  std::vector<PlannedJob> plan = xxl::PlanImport(std::move(mapped), existing);
  s = CheckSchedules(ctx, *stub, plan);
  if (!s.ok()) return ctx.RpcError(s);
  PrintPlan(plan);
  std::map<int64_t, int> count;
  for (const PlannedJob& p : plan) ++count[static_cast<int>(p.action)];
  const int creates = count[static_cast<int>(ImportAction::kCreate)];
  const int exists = count[static_cast<int>(ImportAction::kExists)];
  const int skips = count[static_cast<int>(ImportAction::kSkip)];

  std::map<int64_t, int64_t> ids;
  std::map<int64_t, std::string> skipped;
  KnownIds(plan, existing, &ids, &skipped);
  int children = 0;
  if (!ctx.options().apply) {
    // New jobs have no id yet: stand-ins, so that links to them are not reported dropped.
    for (const PlannedJob& p : plan) {
      if (p.action == ImportAction::kCreate) ids[p.mapped.xxl_id] = -p.mapped.xxl_id;
    }
    SetChildren(ctx, nullptr, plan, ids, skipped, &children);
    std::cout << "dry run: jobs=" << plan.size() << " create=" << creates << " exists=" << exists
              << " skip=" << skips << " children=" << children
              << "; nothing written (--apply writes)\n";
    return 0;
  }
  const int create_failed = CreateJobs(ctx, *stub, plan, &ids, &skipped);
  const int failed = create_failed + SetChildren(ctx, stub.get(), plan, ids, skipped, &children);
  std::cout << "applied: jobs=" << plan.size() << " created=" << creates - create_failed
            << " exists=" << exists << " skip=" << skips << " children=" << children
            << " failed=" << failed << "\n";
  return failed > 0 ? 1 : 0;
}

}  // namespace

Noun ImportNoun() { return {"import", {{"xxl-job", ImportXxlJob}}}; }

}  // namespace jobwheel::ctl
