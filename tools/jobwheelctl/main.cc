// jobwheelctl: a small CLI over the admin APIs (jobs, runs, logs, apps, executors, tokens,
// leader, import of XXL-JOB jobs, audit trail), with table or JSON output, over plaintext, TLS or
// mutual TLS. Exit code 0 on success, 1 on an RPC error, 2 on bad usage. This file parses the flags
// and dispatches; each noun is its own <noun>_commands file with one function per RPC.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/time/time.h"
#include "common/auth/bearer.h"
#include "common/base/flags.h"
#include "common/grpc/channel.h"
#include "tools/jobwheelctl/apps_commands.h"
#include "tools/jobwheelctl/audit_commands.h"
#include "tools/jobwheelctl/command.h"
#include "tools/jobwheelctl/ctl_options.h"
#include "tools/jobwheelctl/executors_commands.h"
#include "tools/jobwheelctl/import_commands.h"
#include "tools/jobwheelctl/jobs_commands.h"
#include "tools/jobwheelctl/leader_commands.h"
#include "tools/jobwheelctl/runs_commands.h"
#include "tools/jobwheelctl/tokens_commands.h"

ABSL_FLAG(std::string, scheduler, "127.0.0.1:7100", "Scheduler address");
ABSL_FLAG(std::string, registry, "127.0.0.1:7101", "Registry address");
ABSL_FLAG(std::string, token_file, "", "Admin token file (JobAdminService, AppAdminService)");
ABSL_FLAG(bool, json, false, "Print JSON instead of a table");
ABSL_FLAG(std::string, app, "", "Filter by app");
ABSL_FLAG(std::string, labels, "",
          "`jobs list`: label selector, e.g. team=payments,tier!=batch (all must hold)");
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
ABSL_FLAG(bool, apply, false, "`import`: write the jobs (default: a dry run that only prints)");
ABSL_FLAG(std::string, app_map, "",
          "`import xxl-job`: XXL job_group ids to apps, GROUPID=app,GROUPID=app");
ABSL_FLAG(std::string, time_zone, "",
          "`import xxl-job`: IANA zone of the cron jobs (XXL-JOB used its admin's; empty: UTC)");
ABSL_FLAG(std::string, actor, "", "`audit list`: only events of this token name");
ABSL_FLAG(std::string, target, "", "`audit list`: only events on this target, e.g. \"job 42\"");
ABSL_FLAG(std::string, action, "", "`audit list`: only this action, e.g. CreateJob");
ABSL_FLAG(std::string, reason, "", "`executors drain`: why (shown next to the executor)");
ABSL_FLAG(std::string, tls_ca, "", "CA (PEM) to verify the servers; enables TLS");
ABSL_FLAG(std::string, tls_cert, "", "Client certificate (PEM) for mutual TLS");
ABSL_FLAG(std::string, tls_key, "", "Private key of --tls_cert");

namespace {

constexpr char kUsage[] = R"(usage: jobwheelctl [flags] COMMAND
  jobs list [--app A] [--labels k=v,k!=v]    jobs get ID
  jobs create --file job.json    jobs ensure --file job.json   (create unless app+name exists)
  jobs pause ID | resume ID | delete ID | trigger ID [--param P]
  jobs count [--app A]           (jobs, enabled jobs, pending and running runs per app)
  runs list [--job ID]           runs get ID      runs log ID      runs kill ID
  runs stats [--app A] [--job ID] [--bucket 1h] [--since 24h]   (runs by status per bucket)
  apps list                      executors list [--app A]
  executors drain APP ADDRESS [--reason TEXT]   executors undrain APP ADDRESS
                                 (no new runs routed to that executor / routed to again)
  tokens create --name N --role admin|operator|viewer|executor [--apps a,b] [--expire_in 720h]
  tokens list [--include_revoked]    tokens revoke ID    tokens whoami
  import xxl-job FILE [--app_map=GROUPID=app,...] [--time_zone=Z] [--apply]
                                 (XXL-JOB jobs from jobinfo/pageList JSON or an xxl_job_info TSV;
                                  a dry run unless --apply)
  audit list [--actor NAME] [--target "job 42"] [--action CreateJob] [--since 24h]
  leader
flags: --scheduler --registry --token_file --json --limit --bucket --since
       --tls_ca --tls_cert --tls_key (TLS / mutual TLS))";

jobwheel::ctl::CtlOptions OptionsFromFlags() {
  jobwheel::ctl::CtlOptions o;
  o.scheduler = absl::GetFlag(FLAGS_scheduler);
  o.registry = absl::GetFlag(FLAGS_registry);
  o.json = absl::GetFlag(FLAGS_json);
  o.app = absl::GetFlag(FLAGS_app);
  o.labels = absl::GetFlag(FLAGS_labels);
  o.job = absl::GetFlag(FLAGS_job);
  o.param = absl::GetFlag(FLAGS_param);
  o.file = absl::GetFlag(FLAGS_file);
  o.limit = absl::GetFlag(FLAGS_limit);
  o.name = absl::GetFlag(FLAGS_name);
  o.role = absl::GetFlag(FLAGS_role);
  o.apps = absl::GetFlag(FLAGS_apps);
  o.expire_in = absl::GetFlag(FLAGS_expire_in);
  o.include_revoked = absl::GetFlag(FLAGS_include_revoked);
  o.bucket = absl::GetFlag(FLAGS_bucket);
  o.since = absl::GetFlag(FLAGS_since);
  o.apply = absl::GetFlag(FLAGS_apply);
  o.app_map = absl::GetFlag(FLAGS_app_map);
  o.time_zone = absl::GetFlag(FLAGS_time_zone);
  o.actor = absl::GetFlag(FLAGS_actor);
  o.target = absl::GetFlag(FLAGS_target);
  o.action = absl::GetFlag(FLAGS_action);
  o.reason = absl::GetFlag(FLAGS_reason);
  return o;
}

int Usage(const std::string& why) {
  std::cerr << "jobwheelctl: " << why << "\n" << kUsage << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = jobwheel::ParseFlagsWithEnv(argc, argv, kUsage);
  const std::vector<std::string> words(args.begin() + 1, args.end());
  if (words.size() < 2 && !(words.size() == 1 && words[0] == "leader")) {
    return Usage("missing command");
  }
  jobwheel::ClientTls tls{absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert),
                          absl::GetFlag(FLAGS_tls_key)};
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Usage("--tls_cert and --tls_key go together");
  }
  if (!tls.cert_file.empty() && tls.ca_file.empty()) return Usage("--tls_cert needs --tls_ca");
  auto token = jobwheel::ReadTokenFile(absl::GetFlag(FLAGS_token_file), "--token_file");
  if (!token.ok()) {
    std::cerr << "jobwheelctl: " << token.status().message() << "\n";
    return 2;
  }
  jobwheel::ctl::CommandContext ctx(OptionsFromFlags(), *std::move(token), std::move(tls), kUsage);
  // The nouns, one file each: a new noun is a new file and a line here.
  const std::vector<jobwheel::ctl::Noun> nouns = {
      jobwheel::ctl::LeaderNoun(), jobwheel::ctl::JobsNoun(),  jobwheel::ctl::RunsNoun(),
      jobwheel::ctl::TokensNoun(), jobwheel::ctl::AppsNoun(),  jobwheel::ctl::ExecutorsNoun(),
      jobwheel::ctl::ImportNoun(), jobwheel::ctl::AuditNoun(),
  };
  return jobwheel::ctl::Dispatch(nouns, words, ctx);
}
