// jobwheelctl run as a real process against a real stack (PostgreSQL, registry, dispatcher,
// scheduler, demo executor): every command exits 0 and prints what it should for good input,
// and bad input gets a clear message on stderr and a non-zero exit (2 for usage, 1 for an RPC
// error), at least one bad case per command group. Effects are checked through the API and
// on the executor, not only in the CLI's own output. Commands: leader; jobs create, ensure,
// list, get, pause, resume, trigger, count, delete; runs list, get, log, kill, stats; apps
// list; executors list; tokens create, whoami, list, revoke; audit list.
#include <algorithm>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/testing/command.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/app_admin.pb.h"
#include "jobwheel/v1/leadership.pb.h"
#include "jobwheel/v1/registry.pb.h"
#include "jobwheel/v1/token_admin.pb.h"
#include "tests/ctl/ctl_stack_test.h"

namespace jobwheel::e2e {
namespace {

using ::jobwheel::testing::CommandResult;
using ::jobwheel::testing::Eventually;
using testing::WriteFile;

template <typename M>
M FromJson(const std::string& json) {
  M m;
  auto s = google::protobuf::util::JsonStringToMessage(json, &m);
  EXPECT_TRUE(s.ok()) << s.message() << "\n" << json;
  return m;
}

// The lines of a table's output that contain `needle`.
std::vector<std::string> RowsWith(const std::string& table, absl::string_view needle) {
  std::vector<std::string> rows;
  for (absl::string_view line : absl::StrSplit(table, '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, needle)) rows.emplace_back(line);
  }
  return rows;
}

// The whitespace-separated cells of a table row.
std::vector<std::string> Cells(const std::string& row) {
  return absl::StrSplit(row, absl::ByAnyChar(" \n"), absl::SkipEmpty());
}

class JobwheelctlTest : public CtlStackTest {
 protected:
  std::string JobFile(const std::string& name, const std::string& json) {
    return WriteFile(absl::StrCat(stack_->dir(), "/", name, ".json"), json);
  }

  // The id in "created job <id> (<name>)".
  static int64_t CreatedId(const CommandResult& r) {
    absl::string_view out = r.out;
    int64_t id = 0;
    if (!absl::ConsumePrefix(&out, "created job ")) return 0;
    return absl::SimpleAtoi(out.substr(0, out.find(' ')), &id) ? id : 0;
  }
};

constexpr char kEchoJob[] = R"({"app": "demo", "name": "ctl-echo", "handler": "echo",
  "param": "hi", "schedule": {"none": {}}, "routingStrategy": "ROUTING_STRATEGY_FIRST",
  "enabled": true})";

TEST_F(JobwheelctlTest, Leader) {
  CommandResult r = Ctl({"leader"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  // "leader: <id>  epoch: 1  since: ...  answered by: <id>": this replica leads.
  std::vector<std::string> cells = Cells(r.out);
  ASSERT_GE(cells.size(), 8u) << r.out;
  EXPECT_EQ(cells[0], "leader:");
  EXPECT_NE(cells[1], "(none)");
  EXPECT_EQ(cells[2], "epoch:");
  EXPECT_EQ(cells[3], "1");
  EXPECT_EQ(cells.back(), cells[1]) << r.out;

  r = Ctl({"--json", "leader"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  auto leader = FromJson<jobwheel::v1::GetLeaderResponse>(r.out);
  EXPECT_TRUE(leader.is_leader());
  EXPECT_EQ(leader.holder_id(), cells[1]);

  // GetLeader needs no token (docs/security.md), so a wrong one changes nothing.
  r = Ctl({"leader"}, WriteFile(stack_->dir() + "/wrong", "not-a-token\n"));
  EXPECT_EQ(r.exit_code, 0) << Show(r);
  // No scheduler there: the RPC error, exit 1.
  ExpectError(Ctl({"--scheduler=127.0.0.1:1", "leader"}), 1, "127.0.0.1:1");
  // A token file that does not exist: a usage error naming the flag.
  ExpectError(Ctl({"leader"}, stack_->dir() + "/missing"), 2, "--token_file");
  // No command at all.
  ExpectError(Ctl({}), 2, "missing command");
  ExpectError(Ctl({"--tls_cert=/x", "leader"}), 2, "--tls_cert and --tls_key go together");
  ExpectError(Ctl({"bogus", "thing"}), 2, "unknown command bogus thing");
}

TEST_F(JobwheelctlTest, Jobs) {
  // create
  CommandResult r = Ctl({"jobs", "create", "--file=" + JobFile("echo", kEchoJob)});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  const int64_t id = CreatedId(r);
  ASSERT_GT(id, 0) << r.out;
  EXPECT_EQ(r.out, absl::StrCat("created job ", id, " (ctl-echo)\n"));
  auto job = GetJob(id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->handler(), "echo");
  EXPECT_EQ(job->param(), "hi");
  EXPECT_TRUE(job->enabled());

  // ensure: an existing app+name is left alone; a new one is created.
  r = Ctl({"jobs", "ensure", "--file=" + JobFile("echo", kEchoJob)});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(r.out, absl::StrCat("job ", id, " (ctl-echo) already exists\n"));
  std::string other = kEchoJob;
  other.replace(other.find("ctl-echo"), 8, "ctl-echo-2");
  r = Ctl({"jobs", "ensure", "--file=" + JobFile("echo2", other)});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  const int64_t id2 = CreatedId(r);
  EXPECT_GT(id2, id) << r.out;

  // list (table and JSON), with the app filter.
  r = Ctl({"jobs", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(RowsWith(r.out, "ID").size(), 1u) << r.out;  // The header.
  ASSERT_EQ(RowsWith(r.out, " ctl-echo ").size(), 1u) << r.out;
  std::vector<std::string> row = Cells(RowsWith(r.out, " ctl-echo ")[0]);
  EXPECT_EQ(row[0], absl::StrCat(id));
  EXPECT_EQ(row[1], "demo");
  EXPECT_EQ(row[3], "none");
  EXPECT_EQ(row[4], "echo");
  EXPECT_EQ(row[5], "yes");
  r = Ctl({"--json", "jobs", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(FromJson<jobwheel::v1::ListJobsResponse>(r.out).jobs_size(), 2);
  r = Ctl({"--app=no-such-app", "jobs", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(RowsWith(r.out, "ctl-echo").empty()) << r.out;
  r = Ctl({"--limit=1", "--json", "jobs", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(FromJson<jobwheel::v1::ListJobsResponse>(r.out).jobs_size(), 1);

  // get
  r = Ctl({"jobs", "get", absl::StrCat(id)});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(RowsWith(r.out, " ctl-echo ").size(), 1u) << r.out;
  r = Ctl({"--json", "jobs", "get", absl::StrCat(id)});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(FromJson<jobwheel::v1::Job>(r.out).name(), "ctl-echo");

  // pause / resume: the job's state changes on the server.
  r = Ctl({"jobs", "pause", absl::StrCat(id)});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(Cells(RowsWith(r.out, " ctl-echo ")[0])[5], "no") << r.out;
  EXPECT_FALSE(GetJob(id)->enabled());
  r = Ctl({"jobs", "resume", absl::StrCat(id)});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(Cells(RowsWith(r.out, " ctl-echo ")[0])[5], "yes") << r.out;
  EXPECT_TRUE(GetJob(id)->enabled());

  // trigger with a param override: the executor runs it with that param.
  r = Ctl({"jobs", "trigger", absl::StrCat(id), "--param=from-ctl"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  int64_t fire = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripSuffix(absl::StripPrefix(r.out, "fire "), "\n"), &fire))
      << r.out;
  auto run = AwaitRun(
      id,
      [](const jobwheel::v1::Run& run) {
        return run.status() == jobwheel::v1::RUN_STATUS_SUCCEEDED;
      },
      absl::Seconds(20));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->fire_id(), fire);
  EXPECT_EQ(run->param(), "from-ctl");
  EXPECT_EQ(run->result_message(), "from-ctl");
  EXPECT_EQ(::jobwheel::testing::Starts(stack_->Executions(0), id).size(), 1u);

  // count: both jobs of app demo, enabled, none running (the triggered run has ended).
  r = Ctl({"--json", "jobs", "count"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  auto counts = FromJson<jobwheel::v1::CountJobsResponse>(r.out);
  ASSERT_EQ(counts.apps_size(), 1) << r.out;
  EXPECT_EQ(counts.apps(0).app(), "demo");
  EXPECT_EQ(counts.apps(0).job_count(), 2);
  EXPECT_EQ(counts.apps(0).enabled_job_count(), 2);
  EXPECT_EQ(counts.apps(0).running_run_count(), 0);
  r = Ctl({"--app=demo", "jobs", "count"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  ASSERT_EQ(RowsWith(r.out, "demo").size(), 1u) << r.out;
  EXPECT_EQ(Cells(RowsWith(r.out, "demo")[0]),
            (std::vector<std::string>{"demo", "2", "2", "0", "0"}))
      << r.out;

  // delete
  r = Ctl({"jobs", "delete", absl::StrCat(id2)});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(r.out, absl::StrCat("deleted job ", id2, "\n"));
  EXPECT_EQ(GetJob(id2).status().code(), absl::StatusCode::kNotFound);

  // Bad input.
  ExpectError(Ctl({"jobs", "get", "abc"}), 2, "jobs get: needs a job id");
  ExpectError(Ctl({"jobs", "pause"}), 2, "jobs pause: needs a job id");
  ExpectError(Ctl({"jobs", "get", "999999"}), 1, "999999");
  ExpectError(Ctl({"jobs", "delete", absl::StrCat(id2)}), 1, absl::StrCat(id2));
  ExpectError(Ctl({"jobs", "create", "--file=" + stack_->dir() + "/none.json"}), 2,
              "--file: cannot read");
  ExpectError(Ctl({"jobs", "create", "--file=" + JobFile("garbage", "{not json")}), 2,
              "--file: not a jobwheel.v1.Job");
  std::string bad_cron = R"({"app": "demo", "name": "bad-cron", "handler": "echo",
      "schedule": {"cron": {"expression": "0 0 25 * * ?"}}})";
  ExpectError(Ctl({"jobs", "create", "--file=" + JobFile("bad", bad_cron)}), 1, "hour");
  ExpectError(Ctl({"jobs", "frobnicate", "1"}), 2, "unknown jobs command frobnicate");
  ExpectError(Ctl({"jobs", "count"}, WriteFile(stack_->dir() + "/wrong", "not-a-token\n")), 1,
              "jobwheelctl: ");
}

TEST_F(JobwheelctlTest, Runs) {
  auto job = CreateJob(NewJob("ctl-sleep", "sleep", "60000"));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(TriggerJob(job->id()).ok());
  auto running = AwaitRun(
      job->id(),
      [](const jobwheel::v1::Run& run) { return run.status() == jobwheel::v1::RUN_STATUS_RUNNING; },
      absl::Seconds(20));
  ASSERT_TRUE(running.ok()) << running.status();
  const std::string run_id = absl::StrCat(running->id());

  // list (table, JSON, job filter)
  CommandResult r = Ctl({"runs", "list", absl::StrCat("--job=", job->id())});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  std::vector<std::string> rows = RowsWith(r.out, "RUNNING");
  ASSERT_EQ(rows.size(), 1u) << r.out;
  std::vector<std::string> row = Cells(rows[0]);
  EXPECT_EQ(row[0], run_id);
  EXPECT_EQ(row[1], absl::StrCat(job->id()));
  EXPECT_EQ(row[2], "MANUAL");
  EXPECT_EQ(row[3], stack_->executor());
  r = Ctl({"--json", "runs", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(FromJson<jobwheel::v1::ListRunsResponse>(r.out).runs_size(), 1);

  // get
  r = Ctl({"runs", "get", run_id});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  jobwheel::v1::Run got = FromJson<jobwheel::v1::Run>(r.out);
  EXPECT_EQ(got.id(), running->id());
  EXPECT_EQ(got.status(), jobwheel::v1::RUN_STATUS_RUNNING);

  // log: the handler's own lines, fetched from the executor.
  ASSERT_TRUE(Eventually(
      [&] {
        r = Ctl({"runs", "log", run_id});
        return r.exit_code == 0 && absl::StrContains(r.out, "sleeping 60000 ms");
      },
      absl::Seconds(10)))
      << Show(r);
  r = Ctl({"--json", "runs", "log", run_id});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_GT(FromJson<jobwheel::v1::GetRunLogResponse>(r.out).lines_size(), 0);

  // kill: the run ends KILLED and its handler stops on the executor.
  r = Ctl({"runs", "kill", run_id});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(FromJson<jobwheel::v1::Run>(r.out).id(), running->id());
  auto killed = AwaitRun(
      job->id(),
      [](const jobwheel::v1::Run& run) { return run.status() == jobwheel::v1::RUN_STATUS_KILLED; },
      absl::Seconds(15));
  ASSERT_TRUE(killed.ok()) << killed.status();
  ASSERT_TRUE(Eventually(
      [&] { return ::jobwheel::testing::Ends(stack_->Executions(0), job->id()).size() == 1; },
      absl::Seconds(10)));
  EXPECT_TRUE(::jobwheel::testing::Ends(stack_->Executions(0), job->id())[0].cancelled);

  // stats: the one run of the job, KILLED, in the window's total and in one bucket.
  r = Ctl(
      {"--json", "runs", "stats", absl::StrCat("--job=", job->id()), "--bucket=1m", "--since=10m"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  auto stats = FromJson<jobwheel::v1::GetRunStatsResponse>(r.out);
  EXPECT_EQ(stats.total(), 1);
  ASSERT_EQ(stats.status_counts_size(), 1) << r.out;
  EXPECT_EQ(stats.status_counts(0).status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_EQ(stats.status_counts(0).count(), 1);
  int64_t in_buckets = 0;
  for (const auto& b : stats.buckets()) in_buckets += b.total();
  EXPECT_EQ(in_buckets, 1);
  r = Ctl({"runs", "stats", absl::StrCat("--job=", job->id())});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  ASSERT_EQ(RowsWith(r.out, "total").size(), 1u) << r.out;
  EXPECT_TRUE(absl::StrContains(RowsWith(r.out, "total")[0], "KILLED=1")) << r.out;

  // Bad input.
  ExpectError(Ctl({"runs", "stats", "--bucket=1s"}), 1, "bucket");
  ExpectError(Ctl({"runs", "kill", run_id}), 1, "already KILLED");
  ExpectError(Ctl({"runs", "get", "0"}), 2, "runs get: needs a run id");
  ExpectError(Ctl({"runs", "log"}), 2, "runs log: needs a run id");
  ExpectError(Ctl({"runs", "get", "999999"}), 1, "999999");
  ExpectError(Ctl({"runs", "frobnicate", "1"}), 2, "unknown runs command frobnicate");
}

TEST_F(JobwheelctlTest, AppsAndExecutors) {
  CommandResult r = Ctl({"apps", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  std::vector<std::string> rows = RowsWith(r.out, "demo");
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_TRUE(absl::StrContains(rows[0], stack_->executor())) << r.out;
  EXPECT_TRUE(absl::StrContains(rows[0], "auto")) << r.out;
  r = Ctl({"--json", "apps", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  auto apps = FromJson<jobwheel::v1::ListAppsResponse>(r.out);
  ASSERT_EQ(apps.apps_size(), 1);
  EXPECT_EQ(apps.apps(0).name(), "demo");

  r = Ctl({"--app=demo", "executors", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  rows = RowsWith(r.out, stack_->executor());
  ASSERT_EQ(rows.size(), 1u) << r.out;
  for (const char* handler : {"echo", "fail", "flaky", "shard", "sleep"}) {
    EXPECT_TRUE(absl::StrContains(rows[0], handler)) << r.out;
  }
  r = Ctl({"--json", "executors", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  auto executors = FromJson<jobwheel::v1::ListExecutorsResponse>(r.out);
  ASSERT_EQ(executors.executors_size(), 1);
  EXPECT_EQ(executors.executors(0).address(), stack_->executor());
  r = Ctl({"--app=other", "executors", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(RowsWith(r.out, stack_->executor()).empty()) << r.out;

  // Drain and undrain: listed as drained in between; bad input is refused naming the field.
  r = Ctl({"--reason=maintenance", "executors", "drain", "demo", stack_->executor()});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(absl::StrContains(r.out, "drained")) << r.out;
  EXPECT_TRUE(Eventually(
      [&] {
        auto listed = Ctl({"--app=demo", "executors", "list"});
        auto row = RowsWith(listed.out, stack_->executor());
        return row.size() == 1 && absl::StrContains(row[0], "drained");
      },
      absl::Seconds(10)));
  r = Ctl({"executors", "undrain", "demo", stack_->executor()});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(Eventually(
      [&] {
        auto listed = Ctl({"--app=demo", "executors", "list"});
        auto row = RowsWith(listed.out, stack_->executor());
        return row.size() == 1 && absl::StrContains(row[0], "routed");
      },
      absl::Seconds(10)));
  ExpectError(Ctl({"executors", "drain", "demo"}), 2, "needs APP and ADDRESS");
  ExpectError(Ctl({"executors", "drain", "demo", "LOCALHOST.:1"}), 1, "address");

  // Bad input: a token the registry does not know; apps has only `list`.
  const std::string wrong = WriteFile(stack_->dir() + "/wrong", "not-a-token\n");
  ExpectError(Ctl({"executors", "list"}, wrong), 1, "jobwheelctl: ");
  ExpectError(Ctl({"apps", "list"}, wrong), 1, "jobwheelctl: ");
  ExpectError(Ctl({"apps", "frobnicate"}), 2, "unknown command apps frobnicate");
}

TEST_F(JobwheelctlTest, Tokens) {
  // create: the secret alone on stdout, the id on stderr.
  CommandResult r = Ctl({"tokens", "create", "--name=ctl-viewer", "--role=viewer"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  const std::string secret(absl::StripSuffix(r.out, "\n"));
  ASSERT_FALSE(secret.empty());
  EXPECT_EQ(secret.find('\n'), std::string::npos) << r.out;
  absl::string_view err = r.err;
  ASSERT_TRUE(absl::ConsumePrefix(&err, "created token ")) << r.err;
  int64_t token_id = 0;
  ASSERT_TRUE(absl::SimpleAtoi(err.substr(0, err.find(' ')), &token_id)) << r.err;
  const std::string viewer_file = WriteFile(stack_->dir() + "/viewer", secret + "\n");

  // The new token works, with its role: a viewer lists jobs but may not pause one.
  r = Ctl({"jobs", "list"}, viewer_file);
  EXPECT_EQ(r.exit_code, 0) << Show(r);
  auto job = CreateJob(NewJob("ctl-guarded", "echo", ""));
  ASSERT_TRUE(job.ok()) << job.status();
  ExpectError(Ctl({"jobs", "pause", absl::StrCat(job->id())}, viewer_file), 1, "jobwheelctl: ");
  EXPECT_TRUE(GetJob(job->id())->enabled());

  // whoami: the caller's own token.
  r = Ctl({"tokens", "whoami"}, viewer_file);
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(absl::StartsWith(r.out, absl::StrCat("ctl-viewer (id ", token_id, "): VIEWER")))
      << r.out;
  r = Ctl({"--json", "tokens", "whoami"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(FromJson<jobwheel::v1::GetCurrentTokenResponse>(r.out).token().role(),
            jobwheel::v1::ROLE_ADMIN);

  // list
  r = Ctl({"tokens", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  std::vector<std::string> rows = RowsWith(r.out, "ctl-viewer");
  ASSERT_EQ(rows.size(), 1u) << r.out;
  std::vector<std::string> row = Cells(rows[0]);
  EXPECT_EQ(row[0], absl::StrCat(token_id));
  EXPECT_EQ(row[2], "VIEWER");
  r = Ctl({"--json", "tokens", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  auto listed = FromJson<jobwheel::v1::ListTokensResponse>(r.out);
  EXPECT_TRUE(std::any_of(listed.tokens().begin(), listed.tokens().end(),
                          [&](const jobwheel::v1::Token& t) { return t.id() == token_id; }));

  // An app-scoped executor token with an expiry.
  r = Ctl({"--json", "tokens", "create", "--name=ctl-exec", "--role=executor", "--apps=demo",
           "--expire_in=1h"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  auto created = FromJson<jobwheel::v1::CreateTokenResponse>(r.out);
  EXPECT_EQ(created.token().role(), jobwheel::v1::ROLE_EXECUTOR);
  ASSERT_EQ(created.token().apps_size(), 1);
  EXPECT_EQ(created.token().apps(0), "demo");
  EXPECT_TRUE(created.token().has_expire_time());
  EXPECT_FALSE(created.secret().empty());

  // revoke: listed as revoked only with --include_revoked, and refused by the servers.
  r = Ctl({"tokens", "revoke", absl::StrCat(token_id)});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(absl::StartsWith(r.out, absl::StrCat("revoked token ", token_id, " (ctl-viewer)")))
      << r.out;
  r = Ctl({"tokens", "list"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(RowsWith(r.out, "ctl-viewer").empty()) << r.out;
  r = Ctl({"tokens", "list", "--include_revoked"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  rows = RowsWith(r.out, "ctl-viewer");
  ASSERT_EQ(rows.size(), 1u) << r.out;
  // ID NAME ROLE APPS EXPIRES REVOKED: no expiry ("-"), revoked at a date.
  EXPECT_EQ(Cells(rows[0])[4], "-") << r.out;
  EXPECT_NE(Cells(rows[0])[5], "-") << r.out;
  ASSERT_TRUE(Eventually(
      [&] {
        return Ctl({"jobs", "list"}, viewer_file).exit_code == 1;
      },
      absl::Seconds(15)));
  ExpectError(Ctl({"jobs", "list"}, viewer_file), 1, "revoked");
  ExpectError(Ctl({"tokens", "whoami"}, viewer_file), 1, "revoked");

  // Bad input.
  ExpectError(Ctl({"tokens", "create", "--name=x", "--role=superuser"}), 2,
              "--role must be admin, operator, viewer or executor");
  ExpectError(Ctl({"tokens", "revoke", "abc"}), 2, "tokens revoke: needs a token id");
  ExpectError(Ctl({"tokens", "revoke", "999999"}), 1, "999999");
  ExpectError(Ctl({"tokens", "create", "--role=viewer"}), 1, "name");
  ExpectError(Ctl({"tokens", "frobnicate"}), 2, "unknown tokens command frobnicate");
}

TEST_F(JobwheelctlTest, Audit) {
  CommandResult r = Ctl({"jobs", "create", "--file=" + JobFile("echo", kEchoJob)});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  const int64_t id = CreatedId(r);
  ASSERT_GT(id, 0) << r.out;
  ASSERT_EQ(Ctl({"jobs", "pause", absl::StrCat(id)}).exit_code, 0);
  const std::string target = absl::StrCat("job ", id);

  // Both calls, newest first, by the admin token, the pause naming the field it changed.
  r = Ctl({"--json", "audit", "list", "--target=" + target});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  auto events = FromJson<jobwheel::v1::ListAuditEventsResponse>(r.out);
  ASSERT_EQ(events.events_size(), 2) << r.out;
  EXPECT_EQ(events.events(0).action(), "PauseJob");
  EXPECT_EQ(events.events(1).action(), "CreateJob");
  EXPECT_FALSE(events.events(0).actor_name().empty());
  bool enabled_changed = false;
  for (const auto& c : events.events(0).changes()) enabled_changed |= c.field() == "enabled";
  EXPECT_TRUE(enabled_changed) << r.out;

  // The table, filtered by action.
  r = Ctl({"audit", "list", "--action=CreateJob"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(RowsWith(r.out, "ACTION").size(), 1u) << r.out;
  std::vector<std::string> rows = RowsWith(r.out, target);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_TRUE(absl::StrContains(rows[0], "CreateJob")) << r.out;
  EXPECT_TRUE(absl::StrContains(rows[0], events.events(1).actor_name())) << r.out;
  r = Ctl({"audit", "list", "--action=DeleteJob"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(RowsWith(r.out, target).empty()) << r.out;

  // Token administration is audited too (the registry's app and drain calls alike): the new
  // token's row, never its secret.
  r = Ctl({"--json", "tokens", "create", "--name=ctl-audited", "--role=viewer"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  const auto made = FromJson<jobwheel::v1::CreateTokenResponse>(r.out);
  r = Ctl({"audit", "list", "--action=CreateToken"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  rows = RowsWith(r.out, absl::StrCat("token ", made.token().id()));
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_TRUE(absl::StrContains(rows[0], "CreateToken")) << r.out;
  r = Ctl({"--json", "audit", "list", "--action=CreateToken"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_FALSE(made.secret().empty());
  EXPECT_FALSE(absl::StrContains(r.out, made.secret())) << r.out;

  // Bad input.
  ExpectError(Ctl({"audit", "list"}, WriteFile(stack_->dir() + "/wrong", "not-a-token\n")), 1,
              "jobwheelctl: ");
  ExpectError(Ctl({"audit", "frobnicate"}), 2, "unknown command audit frobnicate");
}

TEST_F(JobwheelctlTest, JobsListByLabels) {
  const std::string payments = R"({"app": "demo", "name": "ctl-payments", "handler": "echo",
      "schedule": {"none": {}}, "labels": {"team": "payments", "tier": "batch"}})";
  const std::string reports = R"({"app": "demo", "name": "ctl-reports", "handler": "echo",
      "schedule": {"none": {}}, "labels": {"team": "reports"}})";
  ASSERT_EQ(Ctl({"jobs", "create", "--file=" + JobFile("payments", payments)}).exit_code, 0);
  ASSERT_EQ(Ctl({"jobs", "create", "--file=" + JobFile("reports", reports)}).exit_code, 0);

  auto names = [&](const std::string& selector) {
    CommandResult r = Ctl({"--json", "jobs", "list", "--labels=" + selector});
    EXPECT_EQ(r.exit_code, 0) << Show(r);
    std::vector<std::string> out;
    const auto listed = FromJson<jobwheel::v1::ListJobsResponse>(r.out);
    for (const auto& j : listed.jobs()) {
      out.push_back(j.name());
    }
    return out;
  };
  EXPECT_EQ(names("team=payments"), std::vector<std::string>{"ctl-payments"});
  EXPECT_EQ(names("tier!=batch"), std::vector<std::string>{"ctl-reports"});
  EXPECT_EQ(names("team=payments,tier!=batch"), std::vector<std::string>{});
  EXPECT_EQ(names("").size(), 2u);
  CommandResult r = Ctl({"jobs", "list", "--labels=team=reports"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(RowsWith(r.out, "ctl-").size(), 1u) << r.out;
  EXPECT_EQ(RowsWith(r.out, " ctl-reports ").size(), 1u) << r.out;

  ExpectError(Ctl({"jobs", "list", "--labels=team"}), 1, "label_selector");
}

}  // namespace
}  // namespace jobwheel::e2e
