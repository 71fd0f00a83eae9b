// TLS and mutual TLS across every service: a CA and a node certificate are made with the
// openssl CLI; registry, dispatcher, scheduler and the demo executor serve TLS and dial each
// other over TLS (presenting the node certificate as client certificate); a job runs end to
// end, its log is proxied scheduler → executor, jobwheelctl works with --tls_*; plaintext
// clients, TLS clients without a certificate and clients with a certificate from another CA
// are refused.
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"

namespace jobwheel::security_testing {

using testing::Ctx;
using testing::ReadFile;
using testing::Stack;
using testing::WriteFile;
namespace {

using testing::Eventually;
using testing::Process;
using testing::RunfilePath;

// Runs a shell command; true on exit 0.
bool Sh(const std::string& command) { return std::system(command.c_str()) == 0; }

// A CA in `dir`/<name>-ca.{crt,key} and a certificate signed by it, valid for 127.0.0.1 and
// localhost as server and client: `dir`/<name>.{crt,key}.
bool MakeCertificates(const std::string& dir, const std::string& name) {
  const std::string ca = dir + "/" + name + "-ca";
  const std::string node = dir + "/" + name;
  WriteFile(node + ".ext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            "extendedKeyUsage=serverAuth,clientAuth\n"
            "basicConstraints=CA:FALSE\n"
            "keyUsage=digitalSignature,keyEncipherment\n");
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  return Sh(absl::StrCat("openssl req -x509 ", ec, " -keyout ", ca, ".key -out ", ca,
                         ".crt -days 2 -subj '/CN=jobwheel test ", name, " CA' 2>/dev/null")) &&
         Sh(absl::StrCat("openssl req -new ", ec, " -keyout ", node, ".key -out ", node,
                         ".csr -subj '/CN=localhost' 2>/dev/null")) &&
         Sh(absl::StrCat("openssl x509 -req -in ", node, ".csr -CA ", ca, ".crt -CAkey ", ca,
                         ".key -CAcreateserial -out ", node, ".crt -days 2 -extfile ", node,
                         ".ext 2>/dev/null"));
}

// Whether a health check on `target` over `tls` succeeds (one try, 3 s).
bool Reachable(const std::string& target, const ClientTls& tls) {
  auto channel = MakeChannel(target, tls);
  if (!channel.ok()) return false;
  auto stub = grpc::health::v1::Health::NewStub(*channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  grpc::health::v1::HealthCheckResponse resp;
  return stub->Check(&ctx, {}, &resp).ok();
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TestTempDir("tls");
    ASSERT_TRUE(MakeCertificates(dir_, "node")) << "openssl failed";
    ASSERT_TRUE(MakeCertificates(dir_, "rogue")) << "openssl failed";
  }

  // Starts the stack, an executor with a per-app token, and runs one echo job to success.
  void RunJobEndToEnd(Stack& stack) {
    absl::Status started = stack.StartServices();
    ASSERT_TRUE(started.ok()) << started << "\n" << stack.Logs();
    auto tokens = v1::TokenAdminService::NewStub(stack.Channel(stack.scheduler()));
    v1::CreateTokenRequest create;
    create.set_name("exec-demo");
    create.set_role(v1::ROLE_EXECUTOR);
    create.add_apps("demo");
    v1::CreateTokenResponse token;
    grpc::Status s = tokens->CreateToken(Ctx(stack.admin_token()).get(), create, &token);
    ASSERT_TRUE(s.ok()) << s.error_message();
    started = stack.StartExecutor("demo", token.secret());
    ASSERT_TRUE(started.ok()) << started << "\n" << stack.Logs();

    auto jobs = v1::JobAdminService::NewStub(stack.Channel(stack.scheduler()));
    v1::CreateJobRequest req;
    v1::Job* job = req.mutable_job();
    job->set_app("demo");
    job->set_name("tls-echo");
    job->set_handler("echo");
    job->set_param("over tls");
    job->mutable_schedule()->mutable_none();
    job->set_enabled(true);
    v1::CreateJobResponse created;
    s = jobs->CreateJob(Ctx(stack.admin_token()).get(), req, &created);
    ASSERT_TRUE(s.ok()) << s.error_message();
    // The executor registers over TLS, the dispatcher watches over TLS: retry the trigger
    // until a run succeeds.
    v1::TriggerJobRequest trigger;
    trigger.set_id(created.job().id());
    v1::TriggerJobResponse fired;
    ASSERT_TRUE(jobs->TriggerJob(Ctx(stack.admin_token()).get(), trigger, &fired).ok());
    v1::Run run;
    ASSERT_TRUE(Eventually(
        [&] {
          v1::ListRunsRequest list;
          list.set_job_id(created.job().id());
          v1::ListRunsResponse runs;
          if (!jobs->ListRuns(Ctx(stack.admin_token()).get(), list, &runs).ok()) return false;
          for (const auto& r : runs.runs()) {
            if (r.status() == v1::RUN_STATUS_SUCCEEDED) {
              run = r;
              return true;
            }
          }
          if (!runs.runs().empty() && runs.runs(0).status() == v1::RUN_STATUS_FAILED) {
            // Not yet registered when it fired: fire again.
            grpc::ClientContext ctx;
            ctx.AddMetadata("authorization", "Bearer " + stack.admin_token());
            (void)jobs->TriggerJob(&ctx, trigger, &fired);
          }
          return false;
        },
        absl::Seconds(30)))
        << stack.Logs();
    // The scheduler reads the log from the executor over (mutual) TLS.
    v1::GetRunLogRequest get_log;
    get_log.set_id(run.id());
    v1::GetRunLogResponse log;
    s = jobs->GetRunLog(Ctx(stack.admin_token()).get(), get_log, &log);
    ASSERT_TRUE(s.ok()) << s.error_message();
    std::string lines;
    for (const auto& l : log.lines()) absl::StrAppend(&lines, l, "\n");
    EXPECT_NE(lines.find("over tls"), std::string::npos) << lines;
  }

  int Ctl(const Stack& stack, const std::vector<std::string>& tls_flags) {
    std::vector<std::string> args = {"--scheduler=" + stack.scheduler(),
                                     "--token_file=" + stack.dir() + "/admin"};
    for (const auto& f : tls_flags) args.push_back(f);
    args.push_back("jobs");
    args.push_back("list");
    Process ctl;
    if (!ctl.Start(RunfilePath("tools/jobwheelctl/jobwheelctl"), args, dir_ + "/ctl.log").ok()) {
      return -1;
    }
    int code = -1;
    if (!ctl.Wait(absl::Seconds(30), &code).ok()) ctl.Kill();
    return code;
  }

  std::string dir_;
};

TEST_F(TlsTest, MutualTlsEverywhere) {
  Stack stack(Stack::Options{dir_ + "/node-ca.crt", dir_ + "/node.crt", dir_ + "/node.key",
                             /*mutual_tls=*/true});
  RunJobEndToEnd(stack);
  if (HasFatalFailure()) return;

  const ClientTls good{dir_ + "/node-ca.crt", dir_ + "/node.crt", dir_ + "/node.key"};
  const ClientTls no_cert{dir_ + "/node-ca.crt", "", ""};
  const ClientTls rogue_cert{dir_ + "/node-ca.crt", dir_ + "/rogue.crt", dir_ + "/rogue.key"};
  for (const std::string& target :
       {stack.scheduler(), stack.registry(), stack.dispatcher(), stack.executor()}) {
    SCOPED_TRACE(target);
    EXPECT_TRUE(Reachable(target, good));
    EXPECT_FALSE(Reachable(target, ClientTls{})) << "plaintext accepted";
    EXPECT_FALSE(Reachable(target, no_cert)) << "TLS without a client certificate accepted";
    EXPECT_FALSE(Reachable(target, rogue_cert)) << "a certificate from another CA accepted";
  }
  // jobwheelctl speaks mutual TLS with --tls_ca/--tls_cert/--tls_key, and fails without.
  EXPECT_EQ(Ctl(stack, {"--tls_ca=" + good.ca_file, "--tls_cert=" + good.cert_file,
                        "--tls_key=" + good.key_file}),
            0)
      << ReadFile(dir_ + "/ctl.log");
  EXPECT_NE(Ctl(stack, {"--tls_ca=" + good.ca_file}), 0);
  EXPECT_NE(Ctl(stack, {}), 0);
}

TEST_F(TlsTest, ServerTlsWithoutClientCertificates) {
  Stack stack(Stack::Options{dir_ + "/node-ca.crt", dir_ + "/node.crt", dir_ + "/node.key",
                             /*mutual_tls=*/false});
  RunJobEndToEnd(stack);
  if (HasFatalFailure()) return;
  const ClientTls no_cert{dir_ + "/node-ca.crt", "", ""};
  const ClientTls wrong_ca{dir_ + "/rogue-ca.crt", "", ""};
  for (const std::string& target :
       {stack.scheduler(), stack.registry(), stack.dispatcher(), stack.executor()}) {
    SCOPED_TRACE(target);
    EXPECT_TRUE(Reachable(target, no_cert));
    EXPECT_FALSE(Reachable(target, ClientTls{})) << "plaintext accepted";
    EXPECT_FALSE(Reachable(target, wrong_ca)) << "server certificate not verified";
  }
  EXPECT_EQ(Ctl(stack, {"--tls_ca=" + no_cert.ca_file}), 0) << ReadFile(dir_ + "/ctl.log");
}

}  // namespace
}  // namespace jobwheel::security_testing
