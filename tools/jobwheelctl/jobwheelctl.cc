// jobwheelctl: a small CLI over the admin APIs (jobs, runs, logs, apps, executors, tokens,
// leader), with table or JSON output, over plaintext, TLS or mutual TLS. Exit code 0 on success, 1
// on an RPC error, 2 on bad usage.
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/base/flags.h"
#include "common/grpc/grpc_server.h"
#include "common/model/proto_enums.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/leadership.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"
#include "tools/jobwheelctl/terminal_text.h"

ABSL_FLAG(std::string, scheduler, "127.0.0.1:7100", "Scheduler address");
ABSL_FLAG(std::string, registry, "127.0.0.1:7101", "Registry address");
ABSL_FLAG(std::string, token_file, "", "Admin token file (JobAdminService, AppAdminService)");
ABSL_FLAG(bool, json, false, "Print JSON instead of a table");
ABSL_FLAG(std::string, app, "", "Filter by app");
ABSL_FLAG(int64_t, job, 0, "Filter runs by job id");
ABSL_FLAG(std::string, param, "", "Param override for `jobs trigger`");
ABSL_FLAG(std::string, file, "", "JSON file for `jobs create|ensure` (a jobwheel.v1.Job)");
ABSL_FLAG(int, limit, 20, "Rows to list");
ABSL_FLAG(std::string, name, "", "Token name for `tokens create`");
ABSL_FLAG(std::string, role, "",
          "Token role for `tokens create`: admin, operator, viewer, executor");
ABSL_FLAG(std::string, apps, "", "Comma list of apps for `tokens create`");
ABSL_FLAG(absl::Duration, expire_in, absl::ZeroDuration(),
          "`tokens create`: expire after this long (0: never)");
ABSL_FLAG(bool, include_revoked, false, "`tokens list`: also revoked tokens");
ABSL_FLAG(absl::Duration, bucket, absl::Hours(1), "`runs stats`: bucket width");
ABSL_FLAG(absl::Duration, since, absl::ZeroDuration(),
          "`runs stats`: window up to now (0: the server's default, the last 24 h)");
ABSL_FLAG(std::string, tls_ca, "", "CA (PEM) to verify the servers; enables TLS");
ABSL_FLAG(std::string, tls_cert, "", "Client certificate (PEM) for mutual TLS");
ABSL_FLAG(std::string, tls_key, "", "Private key of --tls_cert");

namespace {

using google::protobuf::Message;

constexpr char kUsage[] = R"(usage: jobwheelctl [flags] COMMAND
  jobs list [--app A]            jobs get ID
  jobs create --file job.json    jobs ensure --file job.json   (create unless app+name exists)
  jobs pause ID | resume ID | delete ID | trigger ID [--param P]
  jobs count [--app A]           (jobs, enabled jobs, pending and running runs per app)
  runs list [--job ID]           runs get ID      runs log ID      runs kill ID
  runs stats [--app A] [--job ID] [--bucket 1h] [--since 24h]   (runs by status per bucket)
  apps list                      executors list [--app A]
  tokens create --name N --role admin|operator|viewer|executor [--apps a,b] [--expire_in 720h]
  tokens list [--include_revoked]    tokens revoke ID    tokens whoami
  leader
flags: --scheduler --registry --token_file --json --limit --bucket --since
       --tls_ca --tls_cert --tls_key (TLS / mutual TLS))";

int Usage(const std::string& why) {
  std::cerr << "jobwheelctl: " << why << "\n" << kUsage << "\n";
  return 2;
}

std::string Token(const std::string& path) {
  auto t = jobwheel::ReadTokenFile(path, "--token_file");
  if (!t.ok()) {
    std::cerr << "jobwheelctl: " << t.status().message() << "\n";
    std::exit(2);
  }
  return *t;
}

std::string ToJson(const Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = false;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

std::string Time(const google::protobuf::Timestamp& ts) {
  if (ts.seconds() == 0 && ts.nanos() == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%E3S", jobwheel::FromProto(ts), absl::UTCTimeZone());
}

std::string Trim(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n - 1) + "~";
  return s;
}

void Row(const std::vector<std::string>& cells, const std::vector<int>& widths) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    // Cells carry job data: never raw control characters to the terminal.
    std::string c = Trim(jobwheel::ctl::EscapeForTerminal(cells[i]), widths[i]);
    line += c + std::string(widths[i] - c.size() + 2, ' ');
  }
  std::cout << line << "\n";
}

int RpcError(const grpc::Status& s) {
  std::cerr << "jobwheelctl: " << s.error_code() << " "
            << jobwheel::ctl::EscapeForTerminal(s.error_message()) << "\n";
  return 1;
}

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  jobwheel::AddBearer(*ctx, token);
  return ctx;
}

bool ParseId(const std::string& s, int64_t* id) { return absl::SimpleAtoi(s, id) && *id > 0; }

void PrintJobs(const std::vector<jobwheel::v1::Job>& jobs) {
  const std::vector<int> w = {6, 10, 24, 22, 12, 7, 23};
  Row({"ID", "APP", "NAME", "SCHEDULE", "HANDLER", "ENABLED", "NEXT FIRE (UTC)"}, w);
  for (const auto& j : jobs) {
    std::string sched =
        j.schedule().has_cron() ? j.schedule().cron().expression()
        : j.schedule().has_fix_rate()
            ? absl::StrCat("every ", j.schedule().fix_rate().interval_seconds(), "s")
            : "none";
    Row({absl::StrCat(j.id()), j.app(), j.name(), sched, j.handler(), j.enabled() ? "yes" : "no",
         Time(j.next_fire_time())},
        w);
  }
}

std::string StatusName(jobwheel::v1::RunStatus s) { return jobwheel::RunStatusShortName(s); }

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = jobwheel::ParseFlagsWithEnv(argc, argv, kUsage);
  std::vector<std::string> a(args.begin() + 1, args.end());
  if (a.size() < 2 && !(a.size() == 1 && a[0] == "leader")) return Usage("missing command");
  const bool json = absl::GetFlag(FLAGS_json);
  const jobwheel::ClientTls tls{absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert),
                                absl::GetFlag(FLAGS_tls_key)};
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Usage("--tls_cert and --tls_key go together");
  }
  if (!tls.cert_file.empty() && tls.ca_file.empty()) return Usage("--tls_cert needs --tls_ca");
  auto channel = [&tls](const std::string& target) {
    auto c = jobwheel::MakeChannel(target, tls);
    if (!c.ok()) {
      std::cerr << "jobwheelctl: " << c.status().message() << "\n";
      std::exit(2);
    }
    return *c;
  };
  auto sched = channel(absl::GetFlag(FLAGS_scheduler));
  auto jobs = jobwheel::v1::JobAdminService::NewStub(sched);
  const std::string admin = Token(absl::GetFlag(FLAGS_token_file));

  if (a[0] == "leader") {
    auto stub = jobwheel::v1::LeadershipService::NewStub(sched);
    jobwheel::v1::GetLeaderResponse r;
    grpc::Status s = stub->GetLeader(Ctx(admin).get(), {}, &r);
    if (!s.ok()) return RpcError(s);
    if (json) {
      std::cout << ToJson(r) << "\n";
      return 0;
    }
    std::cout << "leader: "
              << (r.holder_id().empty() ? "(none)"
                                        : jobwheel::ctl::EscapeForTerminal(r.holder_id()))
              << "  epoch: " << r.epoch() << "  since: " << Time(r.since())
              << "  answered by: " << jobwheel::ctl::EscapeForTerminal(r.replica_id()) << "\n";
    return 0;
  }
  const std::string& noun = a[0];
  const std::string& verb = a[1];
  int64_t id = 0;
  if (noun == "jobs") {
    if (verb == "list") {
      jobwheel::v1::ListJobsRequest req;
      req.set_app(absl::GetFlag(FLAGS_app));
      req.set_page_size(absl::GetFlag(FLAGS_limit));
      jobwheel::v1::ListJobsResponse r;
      grpc::Status s = jobs->ListJobs(Ctx(admin).get(), req, &r);
      if (!s.ok()) return RpcError(s);
      if (json) {
        std::cout << ToJson(r) << "\n";
        return 0;
      }
      PrintJobs({r.jobs().begin(), r.jobs().end()});
      return 0;
    }
    if (verb == "create" || verb == "ensure") {
      std::ifstream in(absl::GetFlag(FLAGS_file));
      if (!in) return Usage("--file: cannot read " + absl::GetFlag(FLAGS_file));
      std::stringstream ss;
      ss << in.rdbuf();
      jobwheel::v1::CreateJobRequest req;
      auto parsed = google::protobuf::util::JsonStringToMessage(ss.str(), req.mutable_job());
      if (!parsed.ok())
        return Usage("--file: not a jobwheel.v1.Job: " + std::string(parsed.message()));
      if (verb == "ensure") {
        jobwheel::v1::ListJobsRequest lr;
        lr.set_app(req.job().app());
        lr.set_name_contains(req.job().name());
        lr.set_page_size(500);
        jobwheel::v1::ListJobsResponse l;
        grpc::Status s = jobs->ListJobs(Ctx(admin).get(), lr, &l);
        if (!s.ok()) return RpcError(s);
        for (const auto& j : l.jobs()) {
          if (j.name() == req.job().name()) {
            std::cout << "job " << j.id() << " (" << jobwheel::ctl::EscapeForTerminal(j.name())
                      << ") already exists\n";
            return 0;
          }
        }
      }
      jobwheel::v1::CreateJobResponse r;
      grpc::Status s = jobs->CreateJob(Ctx(admin).get(), req, &r);
      if (!s.ok()) return RpcError(s);
      if (json) {
        std::cout << ToJson(r) << "\n";
        return 0;
      }
      std::cout << "created job " << r.job().id() << " ("
                << jobwheel::ctl::EscapeForTerminal(r.job().name()) << ")\n";
      return 0;
    }
    if (verb == "count") {
      jobwheel::v1::CountJobsRequest req;
      req.set_app(absl::GetFlag(FLAGS_app));
      jobwheel::v1::CountJobsResponse r;
      grpc::Status s = jobs->CountJobs(Ctx(admin).get(), req, &r);
      if (!s.ok()) return RpcError(s);
      if (json) {
        std::cout << ToJson(r) << "\n";
        return 0;
      }
      const std::vector<int> w = {20, 8, 8, 8, 8};
      Row({"APP", "JOBS", "ENABLED", "PENDING", "RUNNING"}, w);
      for (const auto& c : r.apps()) {
        Row({c.app(), absl::StrCat(c.job_count()), absl::StrCat(c.enabled_job_count()),
             absl::StrCat(c.pending_run_count()), absl::StrCat(c.running_run_count())},
            w);
      }
      return 0;
    }
    if (a.size() < 3 || !ParseId(a[2], &id)) return Usage("jobs " + verb + ": needs a job id");
    grpc::Status s;
    jobwheel::v1::Job job;
    if (verb == "get") {
      jobwheel::v1::GetJobRequest req;
      req.set_id(id);
      jobwheel::v1::GetJobResponse r;
      s = jobs->GetJob(Ctx(admin).get(), req, &r);
      job = r.job();
    } else if (verb == "pause") {
      jobwheel::v1::PauseJobRequest req;
      req.set_id(id);
      jobwheel::v1::PauseJobResponse r;
      s = jobs->PauseJob(Ctx(admin).get(), req, &r);
      job = r.job();
    } else if (verb == "resume") {
      jobwheel::v1::ResumeJobRequest req;
      req.set_id(id);
      jobwheel::v1::ResumeJobResponse r;
      s = jobs->ResumeJob(Ctx(admin).get(), req, &r);
      job = r.job();
    } else if (verb == "delete") {
      jobwheel::v1::DeleteJobRequest req;
      req.set_id(id);
      jobwheel::v1::DeleteJobResponse r;
      s = jobs->DeleteJob(Ctx(admin).get(), req, &r);
      if (!s.ok()) return RpcError(s);
      std::cout << "deleted job " << id << "\n";
      return 0;
    } else if (verb == "trigger") {
      jobwheel::v1::TriggerJobRequest req;
      req.set_id(id);
      if (!absl::GetFlag(FLAGS_param).empty()) req.set_param(absl::GetFlag(FLAGS_param));
      jobwheel::v1::TriggerJobResponse r;
      s = jobs->TriggerJob(Ctx(admin).get(), req, &r);
      if (!s.ok()) return RpcError(s);
      std::cout << "fire " << r.fire_id() << "\n";
      return 0;
    } else {
      return Usage("unknown jobs command " + verb);
    }
    if (!s.ok()) return RpcError(s);
    if (json) {
      std::cout << ToJson(job) << "\n";
      return 0;
    }
    PrintJobs({job});
    return 0;
  }
  if (noun == "runs") {
    if (verb == "list") {
      jobwheel::v1::ListRunsRequest req;
      req.set_job_id(absl::GetFlag(FLAGS_job));
      req.set_app(absl::GetFlag(FLAGS_app));
      req.set_page_size(absl::GetFlag(FLAGS_limit));
      jobwheel::v1::ListRunsResponse r;
      grpc::Status s = jobs->ListRuns(Ctx(admin).get(), req, &r);
      if (!s.ok()) return RpcError(s);
      if (json) {
        std::cout << ToJson(r) << "\n";
        return 0;
      }
      const std::vector<int> w = {8, 6, 9, 21, 10, 23, 40};
      Row({"RUN", "JOB", "TRIGGER", "EXECUTOR", "STATUS", "SCHEDULED (UTC)", "MESSAGE"}, w);
      for (const auto& run : r.runs()) {
        std::string tt = jobwheel::TriggerTypeShortName(run.trigger_type());
        Row({absl::StrCat(run.id()), absl::StrCat(run.job_id()), tt, run.executor_address(),
             StatusName(run.status()), Time(run.scheduled_time()),
             run.result_message().empty() ? run.trigger_message() : run.result_message()},
            w);
      }
      return 0;
    }
    if (verb == "stats") {
      jobwheel::v1::GetRunStatsRequest req;
      req.set_app(absl::GetFlag(FLAGS_app));
      req.set_job_id(absl::GetFlag(FLAGS_job));
      *req.mutable_bucket() = jobwheel::ToProtoDuration(absl::GetFlag(FLAGS_bucket));
      if (absl::GetFlag(FLAGS_since) > absl::ZeroDuration()) {
        *req.mutable_start_time() =
            jobwheel::ToProto(jobwheel::RealClock::Get().Now() - absl::GetFlag(FLAGS_since));
      }
      jobwheel::v1::GetRunStatsResponse r;
      grpc::Status s = jobs->GetRunStats(Ctx(admin).get(), req, &r);
      if (!s.ok()) return RpcError(s);
      if (json) {
        std::cout << ToJson(r) << "\n";
        return 0;
      }
      auto counts = [](const auto& status_counts) {
        std::vector<std::string> parts;
        for (const auto& c : status_counts) {
          parts.push_back(absl::StrCat(StatusName(c.status()), "=", c.count()));
        }
        return absl::StrJoin(parts, " ");
      };
      auto late = [](const jobwheel::v1::RunLateness& l) -> std::string {
        if (l.sample_count() == 0) return "-";
        return absl::StrCat(absl::FormatDuration(jobwheel::FromProto(l.p50())), " / ",
                            absl::FormatDuration(jobwheel::FromProto(l.p99())));
      };
      const std::vector<int> w = {23, 8, 22, 50};
      Row({"BUCKET (UTC)", "RUNS", "LATENESS P50 / P99", "BY STATUS"}, w);
      for (const auto& b : r.buckets()) {
        Row({Time(b.start_time()), absl::StrCat(b.total()), late(b.lateness()),
             counts(b.status_counts())},
            w);
      }
      Row({"total", absl::StrCat(r.total()), late(r.lateness()), counts(r.status_counts())}, w);
      return 0;
    }
    if (a.size() < 3 || !ParseId(a[2], &id)) return Usage("runs " + verb + ": needs a run id");
    if (verb == "get" || verb == "kill") {
      jobwheel::v1::Run run;
      grpc::Status s;
      if (verb == "get") {
        jobwheel::v1::GetRunRequest req;
        req.set_id(id);
        jobwheel::v1::GetRunResponse r;
        s = jobs->GetRun(Ctx(admin).get(), req, &r);
        run = r.run();
      } else {
        jobwheel::v1::KillRunRequest req;
        req.set_id(id);
        jobwheel::v1::KillRunResponse r;
        s = jobs->KillRun(Ctx(admin).get(), req, &r);
        run = r.run();
      }
      if (!s.ok()) return RpcError(s);
      std::cout << ToJson(run) << "\n";
      return 0;
    }
    if (verb == "log") {
      jobwheel::v1::GetRunLogRequest req;
      req.set_id(id);
      jobwheel::v1::GetRunLogResponse r;
      grpc::Status s = jobs->GetRunLog(Ctx(admin).get(), req, &r);
      if (!s.ok()) return RpcError(s);
      if (json) {
        std::cout << ToJson(r) << "\n";
        return 0;
      }
      // Line by line, so newlines stay; tabs too. Any other control character is escaped.
      for (const auto& line : r.lines()) {
        std::cout << jobwheel::ctl::EscapeForTerminal(line, /*keep_tabs=*/true) << "\n";
      }
      return 0;
    }
    return Usage("unknown runs command " + verb);
  }
  if (noun == "tokens") {
    auto stub = jobwheel::v1::TokenAdminService::NewStub(sched);
    if (verb == "create") {
      jobwheel::v1::CreateTokenRequest req;
      req.set_name(absl::GetFlag(FLAGS_name));
      const std::string role = absl::AsciiStrToUpper(absl::GetFlag(FLAGS_role));
      jobwheel::v1::Role r = jobwheel::v1::ROLE_UNSPECIFIED;
      if (!jobwheel::v1::Role_Parse("ROLE_" + role, &r) || r == jobwheel::v1::ROLE_UNSPECIFIED) {
        return Usage("tokens create: --role must be admin, operator, viewer or executor");
      }
      req.set_role(r);
      for (absl::string_view app :
           absl::StrSplit(absl::GetFlag(FLAGS_apps), ',', absl::SkipWhitespace())) {
        req.add_apps(std::string(absl::StripAsciiWhitespace(app)));
      }
      if (absl::GetFlag(FLAGS_expire_in) > absl::ZeroDuration()) {
        *req.mutable_expire_time() =
            jobwheel::ToProto(jobwheel::RealClock::Get().Now() + absl::GetFlag(FLAGS_expire_in));
      }
      jobwheel::v1::CreateTokenResponse resp;
      grpc::Status s = stub->CreateToken(Ctx(admin).get(), req, &resp);
      if (!s.ok()) return RpcError(s);
      if (json) {
        std::cout << ToJson(resp) << "\n";
        return 0;
      }
      std::cerr << "created token " << resp.token().id() << " ("
                << jobwheel::ctl::EscapeForTerminal(resp.token().name())
                << "); the secret below is shown only once:\n";
      std::cout << resp.secret() << "\n";
      return 0;
    }
    if (verb == "list") {
      jobwheel::v1::ListTokensRequest req;
      req.set_include_revoked(absl::GetFlag(FLAGS_include_revoked));
      jobwheel::v1::ListTokensResponse resp;
      grpc::Status s = stub->ListTokens(Ctx(admin).get(), req, &resp);
      if (!s.ok()) return RpcError(s);
      if (json) {
        std::cout << ToJson(resp) << "\n";
        return 0;
      }
      const std::vector<int> w = {6, 20, 9, 24, 23, 23, 23};
      Row({"ID", "NAME", "ROLE", "APPS", "EXPIRES (UTC)", "REVOKED (UTC)", "LAST USED (UTC)"}, w);
      for (const auto& t : resp.tokens()) {
        Row({absl::StrCat(t.id()), t.name(), jobwheel::RoleShortName(t.role()),
             t.apps().empty() ? "*" : absl::StrJoin(t.apps(), ","), Time(t.expire_time()),
             Time(t.revoke_time()), Time(t.last_used_time())},
            w);
      }
      return 0;
    }
    if (verb == "revoke") {
      if (a.size() < 3 || !ParseId(a[2], &id)) return Usage("tokens revoke: needs a token id");
      jobwheel::v1::RevokeTokenRequest req;
      req.set_id(id);
      jobwheel::v1::RevokeTokenResponse resp;
      grpc::Status s = stub->RevokeToken(Ctx(admin).get(), req, &resp);
      if (!s.ok()) return RpcError(s);
      std::cout << "revoked token " << id << " ("
                << jobwheel::ctl::EscapeForTerminal(resp.token().name())
                << "); servers refuse it within a few seconds\n";
      return 0;
    }
    if (verb == "whoami") {
      jobwheel::v1::GetCurrentTokenResponse resp;
      grpc::Status s = stub->GetCurrentToken(Ctx(admin).get(), {}, &resp);
      if (!s.ok()) return RpcError(s);
      if (json) {
        std::cout << ToJson(resp) << "\n";
        return 0;
      }
      const jobwheel::v1::Token& t = resp.token();
      std::cout << jobwheel::ctl::EscapeForTerminal(t.name()) << " (id " << t.id()
                << "): " << jobwheel::RoleShortName(t.role()) << " of "
                << (t.apps().empty() ? "every app" : absl::StrJoin(t.apps(), ", ")) << ", expires "
                << Time(t.expire_time()) << "\n";
      return 0;
    }
    return Usage("unknown tokens command " + verb);
  }
  auto reg = channel(absl::GetFlag(FLAGS_registry));
  if (noun == "apps" && verb == "list") {
    auto stub = jobwheel::v1::AppAdminService::NewStub(reg);
    jobwheel::v1::ListAppsResponse r;
    grpc::Status s = stub->ListApps(Ctx(admin).get(), {}, &r);
    if (!s.ok()) return RpcError(s);
    if (json) {
      std::cout << ToJson(r) << "\n";
      return 0;
    }
    const std::vector<int> w = {16, 24, 8, 50};
    Row({"APP", "TITLE", "TYPE", "ONLINE"}, w);
    for (const auto& app : r.apps()) {
      Row({app.name(), app.title(),
           app.address_type() == jobwheel::v1::ADDRESS_TYPE_MANUAL ? "manual" : "auto",
           absl::StrJoin(app.online_addresses(), ",")},
          w);
    }
    return 0;
  }
  if (noun == "executors" && verb == "list") {
    auto stub = jobwheel::v1::RegistryService::NewStub(reg);
    jobwheel::v1::ListExecutorsRequest req;
    req.set_app(absl::GetFlag(FLAGS_app));
    jobwheel::v1::ListExecutorsResponse r;
    // An admin, operator or viewer token: the executors of the apps it may read.
    grpc::Status s = stub->ListExecutors(Ctx(admin).get(), req, &r);
    if (!s.ok()) return RpcError(s);
    if (json) {
      std::cout << ToJson(r) << "\n";
      return 0;
    }
    const std::vector<int> w = {14, 21, 8, 8, 23, 40};
    Row({"APP", "ADDRESS", "RUNNING", "QUEUED", "LAST BEAT (UTC)", "HANDLERS"}, w);
    for (const auto& e : r.executors()) {
      Row({e.app(), e.address(), absl::StrCat(e.running()), absl::StrCat(e.queued()),
           Time(e.last_beat_time()), absl::StrJoin(e.handlers(), ",")},
          w);
    }
    return 0;
  }
  return Usage("unknown command " + noun + " " + verb);
}
