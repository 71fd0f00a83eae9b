#include "tools/jobwheelctl/jobs_commands.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/time/proto_time.h"
#include "google/protobuf/util/json_util.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "tools/jobwheelctl/output.h"
#include "tools/jobwheelctl/terminal_text.h"

namespace jobwheel::ctl {
namespace {

using v1::JobAdminService;

std::unique_ptr<JobAdminService::Stub> Stub(CommandContext& ctx) {
  return JobAdminService::NewStub(ctx.Scheduler());
}

// Prints the job a get/pause/resume answered (table or JSON).
int PrintJob(CommandContext& ctx, const grpc::Status& s, const v1::Job& job) {
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(job);
  PrintJobs({job});
  return 0;
}

int NeedsJobId(CommandContext& ctx, absl::string_view verb) {
  return ctx.Usage(absl::StrCat("jobs ", verb, ": needs a job id"));
}

int ListJobs(CommandContext& ctx) {
  v1::ListJobsRequest req;
  req.set_app(ctx.options().app);
  req.set_label_selector(ctx.options().labels);
  req.set_page_size(ctx.options().limit);
  v1::ListJobsResponse r;
  grpc::Status s = Stub(ctx)->ListJobs(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(r);
  PrintJobs({r.jobs().begin(), r.jobs().end()});
  return 0;
}

// `jobs create`, and `jobs ensure` when `ensure`: nothing when a job of that app and name exists.
int CreateFromFile(CommandContext& ctx, bool ensure) {
  const std::string& file = ctx.options().file;
  std::ifstream in(file);
  if (!in) return ctx.Usage("--file: cannot read " + file);
  std::stringstream ss;
  ss << in.rdbuf();
  v1::CreateJobRequest req;
  auto parsed = google::protobuf::util::JsonStringToMessage(ss.str(), req.mutable_job());
  if (!parsed.ok())
    return ctx.Usage("--file: not a jobwheel.v1.Job: " + std::string(parsed.message()));
  auto stub = Stub(ctx);
  if (ensure) {
    v1::ListJobsRequest lr;
    lr.set_app(req.job().app());
    lr.set_name_contains(req.job().name());
    lr.set_page_size(500);
    v1::ListJobsResponse l;
    grpc::Status s = stub->ListJobs(ctx.Rpc().get(), lr, &l);
    if (!s.ok()) return ctx.RpcError(s);
    for (const auto& j : l.jobs()) {
      if (j.name() == req.job().name()) {
        std::cout << "job " << j.id() << " (" << EscapeForTerminal(j.name())
                  << ") already exists\n";
        return 0;
      }
    }
  }
  v1::CreateJobResponse r;
  grpc::Status s = stub->CreateJob(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(r);
  std::cout << "created job " << r.job().id() << " (" << EscapeForTerminal(r.job().name()) << ")\n";
  return 0;
}

int CreateJob(CommandContext& ctx) { return CreateFromFile(ctx, /*ensure=*/false); }

int EnsureJob(CommandContext& ctx) { return CreateFromFile(ctx, /*ensure=*/true); }

int CountJobs(CommandContext& ctx) {
  v1::CountJobsRequest req;
  req.set_app(ctx.options().app);
  v1::CountJobsResponse r;
  grpc::Status s = Stub(ctx)->CountJobs(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(r);
  const std::vector<int> w = {20, 8, 8, 8, 8};
  Row({"APP", "JOBS", "ENABLED", "PENDING", "RUNNING"}, w);
  for (const auto& c : r.apps()) {
    Row({c.app(), absl::StrCat(c.job_count()), absl::StrCat(c.enabled_job_count()),
         absl::StrCat(c.pending_run_count()), absl::StrCat(c.running_run_count())},
        w);
  }
  return 0;
}

int GetJob(CommandContext& ctx) {
  int64_t id = 0;
  if (!ctx.Id(&id)) return NeedsJobId(ctx, "get");
  v1::GetJobRequest req;
  req.set_id(id);
  v1::GetJobResponse r;
  grpc::Status s = Stub(ctx)->GetJob(ctx.Rpc().get(), req, &r);
  return PrintJob(ctx, s, r.job());
}

int PauseJob(CommandContext& ctx) {
  int64_t id = 0;
  if (!ctx.Id(&id)) return NeedsJobId(ctx, "pause");
  v1::PauseJobRequest req;
  req.set_id(id);
  v1::PauseJobResponse r;
  grpc::Status s = Stub(ctx)->PauseJob(ctx.Rpc().get(), req, &r);
  return PrintJob(ctx, s, r.job());
}

int ResumeJob(CommandContext& ctx) {
  int64_t id = 0;
  if (!ctx.Id(&id)) return NeedsJobId(ctx, "resume");
  v1::ResumeJobRequest req;
  req.set_id(id);
  v1::ResumeJobResponse r;
  grpc::Status s = Stub(ctx)->ResumeJob(ctx.Rpc().get(), req, &r);
  return PrintJob(ctx, s, r.job());
}

int DeleteJob(CommandContext& ctx) {
  int64_t id = 0;
  if (!ctx.Id(&id)) return NeedsJobId(ctx, "delete");
  v1::DeleteJobRequest req;
  req.set_id(id);
  v1::DeleteJobResponse r;
  grpc::Status s = Stub(ctx)->DeleteJob(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  std::cout << "deleted job " << id << "\n";
  return 0;
}

int TriggerJob(CommandContext& ctx) {
  int64_t id = 0;
  if (!ctx.Id(&id)) return NeedsJobId(ctx, "trigger");
  v1::TriggerJobRequest req;
  req.set_id(id);
  if (!ctx.options().param.empty()) req.set_param(ctx.options().param);
  v1::TriggerJobResponse r;
  grpc::Status s = Stub(ctx)->TriggerJob(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  std::cout << "fire " << r.fire_id() << "\n";
  return 0;
}

}  // namespace

void PrintJobs(const std::vector<v1::Job>& jobs) {
  const std::vector<int> w = {6, 10, 24, 22, 12, 7, 23};
  Row({"ID", "APP", "NAME", "SCHEDULE", "HANDLER", "ENABLED", "NEXT FIRE (UTC)"}, w);
  for (const auto& j : jobs) {
    std::string sched =
        j.schedule().has_cron() ? j.schedule().cron().expression()
        : j.schedule().has_fix_rate()
            ? absl::StrCat("every ", j.schedule().fix_rate().interval_seconds(), "s")
        : j.schedule().has_fix_delay()
            ? absl::StrCat("delay ",
                           absl::FormatDuration(FromProto(j.schedule().fix_delay().delay())),
                           " after end")
            : "none";
    Row({absl::StrCat(j.id()), j.app(), j.name(), sched, j.handler(), j.enabled() ? "yes" : "no",
         Time(j.next_fire_time())},
        w);
  }
}

Noun JobsNoun() {
  return {"jobs",
          {{"list", ListJobs},
           {"create", CreateJob},
           {"ensure", EnsureJob},
           {"count", CountJobs},
           {"get", GetJob},
           {"pause", PauseJob},
           {"resume", ResumeJob},
           {"delete", DeleteJob},
           {"trigger", TriggerJob}}};
}

}  // namespace jobwheel::ctl
