#include "tools/jobwheelctl/runs_commands.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/model/proto_enums.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "tools/jobwheelctl/output.h"
#include "tools/jobwheelctl/terminal_text.h"

namespace jobwheel::ctl {
namespace {

using v1::JobAdminService;

std::unique_ptr<JobAdminService::Stub> Stub(CommandContext& ctx) {
  return JobAdminService::NewStub(ctx.Scheduler());
}

int NeedsRunId(CommandContext& ctx, absl::string_view verb) {
  return ctx.Usage(absl::StrCat("runs ", verb, ": needs a run id"));
}

int ListRuns(CommandContext& ctx) {
  v1::ListRunsRequest req;
  req.set_job_id(ctx.options().job);
  req.set_app(ctx.options().app);
  req.set_page_size(ctx.options().limit);
  v1::ListRunsResponse r;
  grpc::Status s = Stub(ctx)->ListRuns(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(r);
  const std::vector<int> w = {8, 6, 9, 21, 10, 23, 40};
  Row({"RUN", "JOB", "TRIGGER", "EXECUTOR", "STATUS", "SCHEDULED (UTC)", "MESSAGE"}, w);
  for (const auto& run : r.runs()) {
    Row({absl::StrCat(run.id()), absl::StrCat(run.job_id()),
         TriggerTypeShortName(run.trigger_type()), run.executor_address(),
         RunStatusShortName(run.status()), Time(run.scheduled_time()),
         run.result_message().empty() ? run.trigger_message() : run.result_message()},
        w);
  }
  return 0;
}

std::string Counts(const google::protobuf::RepeatedPtrField<v1::RunStatusCount>& counts) {
  std::vector<std::string> parts;
  for (const auto& c : counts) {
    parts.push_back(absl::StrCat(RunStatusShortName(c.status()), "=", c.count()));
  }
  return absl::StrJoin(parts, " ");
}

std::string Lateness(const v1::RunLateness& l) {
  if (l.sample_count() == 0) return "-";
  return absl::StrCat(absl::FormatDuration(FromProto(l.p50())), " / ",
                      absl::FormatDuration(FromProto(l.p99())));
}

int RunStats(CommandContext& ctx) {
  v1::GetRunStatsRequest req;
  req.set_app(ctx.options().app);
  req.set_job_id(ctx.options().job);
  *req.mutable_bucket() = ToProtoDuration(ctx.options().bucket);
  if (ctx.options().since > absl::ZeroDuration()) {
    *req.mutable_start_time() = ToProto(RealClock::Get().Now() - ctx.options().since);
  }
  v1::GetRunStatsResponse r;
  grpc::Status s = Stub(ctx)->GetRunStats(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(r);
  const std::vector<int> w = {23, 8, 22, 50};
  Row({"BUCKET (UTC)", "RUNS", "LATENESS P50 / P99", "BY STATUS"}, w);
  for (const auto& b : r.buckets()) {
    Row({Time(b.start_time()), absl::StrCat(b.total()), Lateness(b.lateness()),
         Counts(b.status_counts())},
        w);
  }
  Row({"total", absl::StrCat(r.total()), Lateness(r.lateness()), Counts(r.status_counts())}, w);
  return 0;
}

// get and kill print the run as JSON, with or without --json.
int GetRun(CommandContext& ctx) {
  int64_t id = 0;
  if (!ctx.Id(&id)) return NeedsRunId(ctx, "get");
  v1::GetRunRequest req;
  req.set_id(id);
  v1::GetRunResponse r;
  grpc::Status s = Stub(ctx)->GetRun(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  return PrintJson(r.run());
}

int KillRun(CommandContext& ctx) {
  int64_t id = 0;
  if (!ctx.Id(&id)) return NeedsRunId(ctx, "kill");
  v1::KillRunRequest req;
  req.set_id(id);
  v1::KillRunResponse r;
  grpc::Status s = Stub(ctx)->KillRun(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  return PrintJson(r.run());
}

int RunLog(CommandContext& ctx) {
  int64_t id = 0;
  if (!ctx.Id(&id)) return NeedsRunId(ctx, "log");
  v1::GetRunLogRequest req;
  req.set_id(id);
  v1::GetRunLogResponse r;
  grpc::Status s = Stub(ctx)->GetRunLog(ctx.Rpc().get(), req, &r);
  if (!s.ok()) return ctx.RpcError(s);
  if (ctx.json()) return PrintJson(r);
  // Line by line, so newlines stay; tabs too. Any other control character is escaped.
  for (const auto& line : r.lines()) {
    std::cout << EscapeForTerminal(line, /*keep_tabs=*/true) << "\n";
  }
  return 0;
}

}  // namespace

Noun RunsNoun() {
  return {"runs",
          {{"list", ListRuns},
           {"stats", RunStats},
           {"get", GetRun},
           {"kill", KillRun},
           {"log", RunLog}}};
}

}  // namespace jobwheel::ctl
