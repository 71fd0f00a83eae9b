#include "tests/security/stack.h"

#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/testing/pg_test_db.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace jobwheel::security_testing {

using testing::PickFreePort;
using testing::RunfilePath;

std::string Addr(int port) { return absl::StrCat("127.0.0.1:", port); }

std::string WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
  chmod(path.c_str(), 0600);
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status WaitForServingTls(const std::string& target, const ClientTls& tls,
                               absl::Duration timeout) {
  if (tls.ca_file.empty()) return testing::WaitForServing(target, timeout);
  grpc::SslCredentialsOptions opts;
  opts.pem_root_certs = ReadFile(tls.ca_file);
  if (!tls.cert_file.empty()) {
    opts.pem_cert_chain = ReadFile(tls.cert_file);
    opts.pem_private_key = ReadFile(tls.key_file);
  }
  const absl::Time deadline = absl::Now() + timeout;
  std::string last;
  while (absl::Now() < deadline) {
    // A fresh channel (and connection) per try: a connection attempt made while the server
    // was still starting can hang far longer than the try.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(target, grpc::SslCredentials(opts), args);
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_wait_for_ready(true);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1000));
    grpc::health::v1::HealthCheckResponse resp;
    grpc::Status s = stub->Check(&ctx, {}, &resp);
    if (s.ok() && resp.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      return absl::OkStatus();
    }
    last = s.ok() ? "not serving" : s.error_message();
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat(target, " not serving: ", last));
}

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  AddBearer(*ctx, token);
  return ctx;
}

Stack::~Stack() { Stop(); }

ClientTls Stack::client_tls() const {
  ClientTls tls;
  tls.ca_file = options_.tls_ca;
  if (options_.mutual_tls) {
    tls.cert_file = options_.tls_cert;
    tls.key_file = options_.tls_key;
  }
  return tls;
}

std::shared_ptr<grpc::Channel> Stack::Channel(const std::string& target) const {
  return *MakeChannel(target, client_tls());
}

std::vector<std::string> Stack::TlsServerFlags() const {
  if (options_.tls_cert.empty()) return {};
  std::vector<std::string> flags = {"--tls_cert=" + options_.tls_cert,
                                    "--tls_key=" + options_.tls_key};
  if (options_.mutual_tls) flags.push_back("--tls_client_ca=" + options_.tls_ca);
  return flags;
}

std::vector<std::string> Stack::TlsClientFlags() const {
  if (options_.tls_ca.empty()) return {};
  // The server certificate doubles as the client certificate (it has clientAuth usage).
  return {"--tls_ca=" + options_.tls_ca};
}

absl::Status Stack::WaitServing(const std::string& target) const {
  return WaitForServingTls(target, client_tls(), absl::Seconds(30));
}

absl::Status Stack::StartServices() {
  auto dsn = testing::CreateTestDatabase();
  if (!dsn.ok()) return dsn.status();
  dsn_ = *dsn;
  dir_ = testing::TestTempDir("security");
  // Random per run: the tests never rely on a well-known secret.
  admin_token_ = absl::StrCat("admin-", PickFreePort(), "-", absl::ToUnixNanos(absl::Now()));
  cluster_token_ = absl::StrCat("cluster-", PickFreePort(), "-", absl::ToUnixNanos(absl::Now()));
  const std::string admin_file = WriteFile(dir_ + "/admin", admin_token_ + "\n");
  const std::string cluster_file = WriteFile(dir_ + "/cluster", cluster_token_ + "\n");
  registry_port_ = PickFreePort();
  dispatcher_port_ = PickFreePort();
  scheduler_port_ = PickFreePort();

  std::vector<std::string> args = {"--listen=" + Addr(registry_port_), "--db_dsn=" + dsn_,
                                   "--metrics_address=", "--cluster_token_file=" + cluster_file,
                                   "--admin_token_file=" + admin_file};
  for (auto& f : TlsServerFlags()) args.push_back(f);
  absl::Status s =
      registry_.Start(RunfilePath("services/registry/registry"), args, dir_ + "/registry.log");
  if (!s.ok()) return s;
  if (!(s = WaitServing(Addr(registry_port_))).ok()) return s;

  args = {"--listen=" + Addr(dispatcher_port_), "--db_dsn=" + dsn_, "--metrics_address=",
          "--registry_target=" + Addr(registry_port_), "--cluster_token_file=" + cluster_file};
  for (auto& f : TlsServerFlags()) args.push_back(f);
  for (auto& f : TlsClientFlags()) args.push_back(f);
  s = dispatcher_.Start(RunfilePath("services/dispatcher/dispatcher"), args,
                        dir_ + "/dispatcher.log");
  if (!s.ok()) return s;
  if (!(s = WaitServing(Addr(dispatcher_port_))).ok()) return s;

  args = {"--listen=" + Addr(scheduler_port_), "--db_dsn=" + dsn_, "--metrics_address=",
          "--dispatcher_target=" + Addr(dispatcher_port_), "--admin_token_file=" + admin_file,
          "--cluster_token_file=" + cluster_file};
  for (auto& f : TlsServerFlags()) args.push_back(f);
  for (auto& f : TlsClientFlags()) args.push_back(f);
  s = scheduler_.Start(RunfilePath("services/scheduler/scheduler"), args,
                       dir_ + "/scheduler.log");
  if (!s.ok()) return s;
  return WaitServing(Addr(scheduler_port_));
}

absl::Status Stack::StartExecutor(const std::string& app, const std::string& executor_token,
                                  bool allow_scripts) {
  executor_port_ = PickFreePort();
  const std::string token_file = WriteFile(dir_ + "/executor-" + app, executor_token + "\n");
  std::vector<std::string> args = {"--listen=" + Addr(executor_port_),
                                   "--app=" + app,
                                   "--registry_target=" + Addr(registry_port_),
                                   "--dispatcher_target=" + Addr(dispatcher_port_),
                                   "--metrics_address=",
                                   "--log_dir=" + executor_log_dir(),
                                   "--spool_dir=" + dir_ + "/exec-spool",
                                   "--executor_token_file=" + token_file,
                                   "--cluster_token_file=" + dir_ + "/cluster"};
  if (allow_scripts) args.push_back("--allow_scripts");
  for (auto& f : TlsServerFlags()) args.push_back(f);
  for (auto& f : TlsClientFlags()) args.push_back(f);
  absl::Status s = executor_.Start(RunfilePath("sdk/examples/demo_executor"), args,
                                   dir_ + "/executor.log");
  if (!s.ok()) return s;
  return WaitServing(Addr(executor_port_));
}

void Stack::Stop() {
  for (testing::Process* p : {&executor_, &scheduler_, &dispatcher_, &registry_}) {
    if (!p->running()) continue;
    p->Signal(SIGTERM);
    if (!p->Wait(absl::Seconds(10)).ok()) p->Kill();
  }
}

std::string Stack::Logs() const {
  std::string out;
  for (const char* name : {"registry", "dispatcher", "scheduler", "executor"}) {
    std::string text = ReadFile(absl::StrCat(dir_, "/", name, ".log"));
    if (text.size() > 3000) text = text.substr(text.size() - 3000);
    absl::StrAppend(&out, "---- ", name, ".log (tail)\n", text, "\n");
  }
  return out;
}

}  // namespace jobwheel::security_testing
