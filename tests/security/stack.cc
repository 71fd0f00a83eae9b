#include "tests/security/stack.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"

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

namespace {

// Whether something accepts TCP connections on 127.0.0.1:<port of target>.
bool Listening(const std::string& target) {
  int port = 0;
  const size_t colon = target.rfind(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(target.substr(colon + 1), &port)) {
    return true;  // Not host:port: let the health check find out.
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

absl::Status WaitForServingTls(const std::string& target, const ClientTls& tls,
                               absl::Duration timeout) {
  // Wait for the listening socket first: a health check sent before the server listens puts
  // the gRPC channel into reconnect backoff, which cost ~5 s per process started.
  const absl::Time start = RealClock::Get().Now();
  if (!testing::Eventually([&] { return Listening(target); }, timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(target, " never listened"));
  }
  timeout -= RealClock::Get().Now() - start;
  if (tls.ca_file.empty()) return testing::WaitForServing(target, timeout);
  grpc::SslCredentialsOptions opts;
  opts.pem_root_certs = ReadFile(tls.ca_file);
  if (!tls.cert_file.empty()) {
    opts.pem_cert_chain = ReadFile(tls.cert_file);
    opts.pem_private_key = ReadFile(tls.key_file);
  }
  const absl::Time deadline = RealClock::Get().Now() + timeout;
  std::string last;
  while (RealClock::Get().Now() < deadline) {
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
  // Its own directory per stack (several tests of one process each start one).
  static std::atomic<int> stacks{0};
  const int n = stacks++;
  dir_ = testing::TestTempDir(n == 0 ? "security" : absl::StrCat("security", n));
  // Random per run: the tests never rely on a well-known secret.
  admin_token_ =
      absl::StrCat("admin-", PickFreePort(), "-", absl::ToUnixNanos(RealClock::Get().Now()));
  const std::string admin_file = WriteFile(dir_ + "/admin", admin_token_ + "\n");
  auto keys = testing::WriteCallerKeys(dir_);
  if (!keys.ok()) return keys.status();
  caller_keys_ = *keys;
  registry_port_ = PickFreePort();
  dispatcher_port_ = PickFreePort();
  scheduler_port_ = PickFreePort();

  std::vector<std::string> args = {"--listen=" + Addr(registry_port_), "--db_dsn=" + dsn_,
                                   "--metrics_address=", "--admin_token_file=" + admin_file};
  for (auto& f : caller_keys_.RegistryFlags()) args.push_back(f);
  for (auto& f : TlsServerFlags()) args.push_back(f);
  absl::Status s =
      registry_.Start(RunfilePath("services/registry/registry"), args, dir_ + "/registry.log");
  if (!s.ok()) return s;
  if (!(s = WaitServing(Addr(registry_port_))).ok()) return s;

  args = {"--listen=" + Addr(dispatcher_port_), "--db_dsn=" + dsn_,
          "--metrics_address=", "--registry_target=" + Addr(registry_port_)};
  for (auto& f : caller_keys_.DispatcherFlags()) args.push_back(f);
  for (auto& f : TlsServerFlags()) args.push_back(f);
  for (auto& f : TlsClientFlags()) args.push_back(f);
  s = dispatcher_.Start(RunfilePath("services/dispatcher/dispatcher"), args,
                        dir_ + "/dispatcher.log");
  if (!s.ok()) return s;
  if (!(s = WaitServing(Addr(dispatcher_port_))).ok()) return s;

  args = {"--listen=" + Addr(scheduler_port_), "--db_dsn=" + dsn_,
          "--metrics_address=", "--dispatcher_target=" + Addr(dispatcher_port_),
          "--admin_token_file=" + admin_file};
  for (auto& f : caller_keys_.SchedulerFlags()) args.push_back(f);
  for (auto& f : TlsServerFlags()) args.push_back(f);
  for (auto& f : TlsClientFlags()) args.push_back(f);
  s = scheduler_.Start(RunfilePath("services/scheduler/scheduler"), args, dir_ + "/scheduler.log");
  if (!s.ok()) return s;
  return WaitServing(Addr(scheduler_port_));
}

absl::Status Stack::StartExecutor(const std::string& app, const std::string& executor_token,
                                  bool allow_scripts) {
  ExecutorSpec spec;
  spec.app = app;
  spec.token = executor_token;
  spec.allow_scripts = allow_scripts;
  const int index = static_cast<int>(executors_.size());
  const std::string token_file = WriteFile(dir_ + "/executor-" + app, executor_token + "\n");
  return StartExecutorProcess(index, spec, token_file);
}

absl::StatusOr<int> Stack::AddExecutor(const ExecutorSpec& spec) {
  const int index = static_cast<int>(executors_.size());
  std::string token = spec.token;
  if (token.empty()) {
    auto created = CreateToken(absl::StrCat("executor-", spec.app, "-", index),
                               jobwheel::v1::ROLE_EXECUTOR, {spec.app});
    if (!created.ok()) return created.status();
    token = *created;
  }
  const std::string token_file =
      WriteFile(absl::StrCat(dir_, "/executor-", spec.app, "-", index), token + "\n");
  absl::Status s = StartExecutorProcess(index, spec, token_file);
  if (!s.ok()) return s;
  s = WaitExecutorOnline(spec.app, executor(index), absl::Seconds(30));
  if (!s.ok()) return s;
  return index;
}

absl::Status Stack::StartExecutorProcess(int index, const ExecutorSpec& spec,
                                         const std::string& token_file) {
  auto e = std::make_unique<ExecutorProcess>();
  e->port = PickFreePort();
  e->name = index == 0 ? "executor" : absl::StrCat("executor-", index);
  const std::string suffix = index == 0 ? "" : absl::StrCat("-", index);
  std::vector<std::string> args = {"--listen=" + Addr(e->port),
                                   "--app=" + spec.app,
                                   "--registry_target=" + Addr(registry_port_),
                                   "--dispatcher_target=" + Addr(dispatcher_port_),
                                   "--metrics_address=",
                                   "--log_dir=" + dir_ + "/exec-logs" + suffix,
                                   "--spool_dir=" + dir_ + "/exec-spool" + suffix,
                                   "--executions_file=" + dir_ + "/" + e->name + ".executions",
                                   "--executor_token_file=" + token_file};
  for (auto& f : caller_keys_.ExecutorFlags()) args.push_back(f);
  if (spec.allow_scripts) args.push_back("--allow_scripts");
  for (auto& f : TlsServerFlags()) args.push_back(f);
  for (auto& f : TlsClientFlags()) args.push_back(f);
  for (const std::string& f : spec.extra_flags) args.push_back(f);
  absl::Status s = e->process.Start(RunfilePath("sdk/examples/demo_executor"), args,
                                    dir_ + "/" + e->name + ".log");
  const std::string address = Addr(e->port);
  executors_.push_back(std::move(e));
  if (!s.ok()) return s;
  return WaitServing(address);
}

std::string Stack::CallerToken(absl::string_view issuer, absl::string_view audience) const {
  const std::string& key =
      issuer == "scheduler" ? caller_keys_.scheduler_key : caller_keys_.dispatcher_key;
  absl::StatusOr<std::string> token = testing::SignCallerToken(key, issuer, audience);
  return token.ok() ? *token : std::string();
}

absl::StatusOr<std::string> Stack::CreateToken(const std::string& name, jobwheel::v1::Role role,
                                               const std::vector<std::string>& apps) {
  auto stub = jobwheel::v1::TokenAdminService::NewStub(Channel(scheduler()));
  jobwheel::v1::CreateTokenRequest req;
  req.set_name(name);
  req.set_role(role);
  for (const std::string& a : apps) req.add_apps(a);
  jobwheel::v1::CreateTokenResponse resp;
  grpc::Status s = stub->CreateToken(Ctx(admin_token_).get(), req, &resp);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        absl::StrCat("CreateToken ", name, ": ", s.error_message()));
  }
  return resp.secret();
}

absl::Status Stack::WaitExecutorOnline(const std::string& app, const std::string& address,
                                       absl::Duration timeout) const {
  auto stub = jobwheel::v1::AppAdminService::NewStub(Channel(registry()));
  std::string last;
  const bool online = testing::Eventually(
      [&] {
        jobwheel::v1::ListAppsResponse resp;
        grpc::Status s = stub->ListApps(Ctx(admin_token_).get(), {}, &resp);
        if (!s.ok()) {
          last = s.error_message();
          return false;
        }
        for (const auto& a : resp.apps()) {
          if (a.name() != app) continue;
          for (const auto& online : a.online_addresses()) {
            if (online == address) return true;
          }
        }
        last = "not listed online";
        return false;
      },
      timeout);
  if (online) return absl::OkStatus();
  return absl::DeadlineExceededError(
      absl::StrCat("executor ", address, " of app ", app, " never online: ", last));
}

std::string Stack::executor(int i) const {
  return i < static_cast<int>(executors_.size()) ? Addr(executors_[i]->port) : "";
}

std::string Stack::executor_log_dir(int i) const {
  return i == 0 ? dir_ + "/exec-logs" : absl::StrCat(dir_, "/exec-logs-", i);
}

std::vector<testing::Execution> Stack::Executions(int i) const {
  if (i >= static_cast<int>(executors_.size())) return {};
  return testing::ReadExecutions(dir_ + "/" + executors_[i]->name + ".executions");
}

std::vector<testing::Execution> Stack::Executions() const {
  std::vector<testing::Execution> all;
  for (int i = 0; i < static_cast<int>(executors_.size()); ++i) {
    for (testing::Execution& e : Executions(i)) all.push_back(std::move(e));
  }
  return all;
}

void Stack::Stop() {
  std::vector<testing::Process*> processes;
  for (auto& e : executors_) processes.push_back(&e->process);
  for (testing::Process* p : {&scheduler_, &dispatcher_, &registry_}) processes.push_back(p);
  for (testing::Process* p : processes) {
    if (!p->running()) continue;
    p->Signal(SIGTERM);
    if (!p->Wait(absl::Seconds(10)).ok()) p->Kill();
  }
}

std::string Stack::Logs() const {
  std::string out;
  std::vector<std::string> names = {"registry", "dispatcher", "scheduler"};
  for (const auto& e : executors_) names.push_back(e->name);
  for (const std::string& name : names) {
    std::string text = ReadFile(absl::StrCat(dir_, "/", name, ".log"));
    if (text.size() > 3000) text = text.substr(text.size() - 3000);
    absl::StrAppend(&out, "---- ", name, ".log (tail)\n", text, "\n");
  }
  return out;
}

}  // namespace jobwheel::security_testing
