#include "common/testing/stack.h"

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
#include "common/model/instance_tag.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "httplib.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "jobwheel/v1/leadership.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"

namespace jobwheel::testing {

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

void Append(std::vector<std::string>& to, const std::vector<std::string>& flags) {
  to.insert(to.end(), flags.begin(), flags.end());
}

}  // namespace

absl::Status WaitForServingTls(const std::string& target, const ClientTls& tls,
                               absl::Duration timeout, const std::string& service) {
  // Wait for the listening socket first: a health check sent before the server listens puts
  // the gRPC channel into reconnect backoff, which cost ~5 s per process started.
  const absl::Time start = RealClock::Get().Now();
  if (!Eventually([&] { return Listening(target); }, timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(target, " never listened"));
  }
  timeout -= RealClock::Get().Now() - start;
  if (tls.ca_file.empty()) return WaitForServing(target, timeout, service);
  grpc::SslCredentialsOptions opts;
  opts.pem_root_certs = ReadFile(tls.ca_file);
  if (!tls.cert_file.empty()) {
    opts.pem_cert_chain = ReadFile(tls.cert_file);
    opts.pem_private_key = ReadFile(tls.key_file);
  }
  std::string last;
  const bool serving = Eventually(
      [&] {
        // A fresh channel (and connection) per try: a connection attempt made while the
        // server was still starting can hang far longer than the try.
        grpc::ChannelArguments args;
        args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        auto channel = grpc::CreateCustomChannel(target, grpc::SslCredentials(opts), args);
        auto stub = grpc::health::v1::Health::NewStub(channel);
        grpc::ClientContext ctx;
        ctx.set_wait_for_ready(true);
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1000));
        grpc::health::v1::HealthCheckRequest req;
        req.set_service(service);
        grpc::health::v1::HealthCheckResponse resp;
        grpc::Status s = stub->Check(&ctx, req, &resp);
        if (s.ok() && resp.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
          return true;
        }
        last = s.ok() ? "not serving" : s.error_message();
        return false;
      },
      timeout);
  if (serving) return absl::OkStatus();
  return absl::DeadlineExceededError(absl::StrCat(target, " not serving: ", last));
}

absl::StatusOr<int> RunToExit(const std::string& binary, const std::vector<std::string>& args,
                              const std::string& log, const std::vector<std::string>& env,
                              absl::Duration timeout) {
  Process p;
  if (absl::Status s = p.Start(RunfilePath(binary), args, log, env); !s.ok()) return s;
  int code = -1;
  if (!p.Wait(timeout, &code).ok()) {
    p.Kill();
    return absl::DeadlineExceededError(absl::StrCat(binary, " kept running"));
  }
  return code;
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

std::string Stack::MetricsFlag(StackProcess& p) const {
  if (!options_.metrics) return "--metrics_address=";
  if (p.metrics_port == 0) p.metrics_port = PickFreePort();
  return "--metrics_address=" + Addr(p.metrics_port);
}

std::string Stack::BinaryPath(const std::string& binary) const {
  return options_.bin_dir.empty() ? RunfilePath(binary) : options_.bin_dir + "/" + binary;
}

std::vector<std::string> Stack::RegistryFlags() const {
  std::vector<std::string> flags;
  if (!executor_file_.empty()) flags.push_back("--executor_token_file=" + executor_file_);
  Append(flags, caller_keys_.RegistryFlags());
  Append(flags, TlsServerFlags());
  return flags;
}

std::vector<std::string> Stack::DispatcherFlags() const {
  std::vector<std::string> flags;
  if (!executor_file_.empty()) flags.push_back("--executor_token_file=" + executor_file_);
  Append(flags, caller_keys_.DispatcherFlags());
  Append(flags, TlsServerFlags());
  Append(flags, TlsClientFlags());
  return flags;
}

std::vector<std::string> Stack::SchedulerFlags() const {
  std::vector<std::string> flags = caller_keys_.SchedulerFlags();
  Append(flags, TlsServerFlags());
  Append(flags, TlsClientFlags());
  return flags;
}

std::vector<std::string> Stack::ExecutorFlags() const {
  std::vector<std::string> flags = caller_keys_.ExecutorFlags();
  Append(flags, TlsServerFlags());
  Append(flags, TlsClientFlags());
  return flags;
}

absl::Status Stack::Prepare() {
  if (prepared_) return absl::OkStatus();
  dsn_ = options_.dsn;
  if (dsn_.empty()) {
    auto dsn = options_.migrate_database ? CreateMigratedTestDatabase() : CreateTestDatabase();
    if (!dsn.ok()) return dsn.status();
    dsn_ = *dsn;
  }
  dir_ = options_.dir;
  if (dir_.empty()) {
    // Its own directory per stack (several tests of one process each start one).
    static std::atomic<int> stacks{0};
    const int n = stacks++;
    dir_ = TestTempDir(n == 0 ? "stack" : absl::StrCat("stack", n));
  }
  if (!options_.credentials_dir.empty()) {
    const std::string& c = options_.credentials_dir;
    admin_file_ = c + "/admin";
    std::string admin = ReadFile(admin_file_);
    while (!admin.empty() && (admin.back() == '\n' || admin.back() == '\r')) admin.pop_back();
    admin_token_ = admin;
    executor_file_ = c + "/executor";
    caller_keys_.scheduler_key = c + "/scheduler.key";
    caller_keys_.scheduler_pub = c + "/scheduler.pub";
    caller_keys_.dispatcher_key = c + "/dispatcher.key";
    caller_keys_.dispatcher_pub = c + "/dispatcher.pub";
  } else {
    // Random per run unless given: the tests never rely on a well-known secret.
    admin_token_ = !options_.admin_token.empty()
                       ? options_.admin_token
                       : absl::StrCat("admin-", PickFreePort(), "-",
                                      absl::ToUnixNanos(RealClock::Get().Now()));
    admin_file_ = WriteFile(dir_ + "/admin", admin_token_ + "\n");
    if (!options_.executor_token.empty()) {
      executor_file_ = WriteFile(dir_ + "/executor", options_.executor_token + "\n");
    }
    auto keys = WriteCallerKeys(dir_);
    if (!keys.ok()) return keys.status();
    caller_keys_ = *keys;
  }
  PrepareReplicas("registry", kRegistryBinary, options_.registry, registries_);
  PrepareReplicas("dispatcher", kDispatcherBinary, options_.dispatcher, dispatchers_);
  PrepareReplicas("scheduler", kSchedulerBinary, options_.scheduler, schedulers_);
  // The flags name the other services' ports: built once every port is known.
  for (auto* group : {&registries_, &dispatchers_, &schedulers_}) {
    const std::string service = group == &registries_    ? "registry"
                                : group == &dispatchers_ ? "dispatcher"
                                                         : "scheduler";
    const ServiceOptions& so = group == &registries_    ? options_.registry
                               : group == &dispatchers_ ? options_.dispatcher
                                                        : options_.scheduler;
    for (size_t i = 0; i < group->size(); ++i) {
      StackProcess& p = *(*group)[i];
      p.args = {"--listen=" + p.address(), "--db_dsn=" + dsn_, MetricsFlag(p)};
      if (i < so.replica_ids.size() && !so.replica_ids[i].empty()) {
        p.args.push_back("--replica_id=" + so.replica_ids[i]);
      }
      Append(p.args, ServiceArgs(service));
      Append(p.args, so.extra_flags);
    }
  }
  prepared_ = true;
  return absl::OkStatus();
}

void Stack::PrepareReplicas(const std::string& service, const std::string& binary,
                            const ServiceOptions& so,
                            std::vector<std::unique_ptr<StackProcess>>& out) {
  for (int i = 0; i < so.replicas; ++i) {
    auto p = std::make_unique<StackProcess>();
    const bool has_id = i < static_cast<int>(so.replica_ids.size()) && !so.replica_ids[i].empty();
    p->name = has_id ? so.replica_ids[i] : i == 0 ? service : absl::StrCat(service, "-", i + 1);
    p->binary = binary;
    p->port = PickFreePort();
    out.push_back(std::move(p));
  }
}

std::vector<std::string> Stack::ServiceArgs(const std::string& service) const {
  std::vector<std::string> args;
  if (service == "registry") {
    args.push_back("--admin_token_file=" + admin_file_);
    Append(args, RegistryFlags());
  } else if (service == "dispatcher") {
    args.push_back("--registry_target=" + registry(0));
    Append(args, DispatcherFlags());
  } else {
    args.push_back("--dispatcher_target=" + dispatcher(0));
    args.push_back("--admin_token_file=" + admin_file_);
    Append(args, SchedulerFlags());
  }
  return args;
}

absl::Status Stack::StartServices() {
  if (absl::Status s = Prepare(); !s.ok()) return s;
  for (const auto& [group, so] : {std::make_pair(&registries_, &options_.registry),
                                  std::make_pair(&dispatchers_, &options_.dispatcher),
                                  std::make_pair(&schedulers_, &options_.scheduler)}) {
    if (so->start_later) continue;
    for (auto& p : *group) {
      if (absl::Status s = Start(*p); !s.ok()) return s;
    }
  }
  // The app of the stack's executors (admins create apps: registrations never do).
  if (!registries_.empty() && !options_.registry.start_later) return EnsureApp("demo");
  return absl::OkStatus();
}

absl::Status Stack::Start(StackProcess& p) {
  if (p.proc->pid() > 0 && p.proc->running()) StopProcess(p);
  if (p.log.empty()) p.log = absl::StrCat(dir_, "/", p.name, ".log");
  p.proc = std::make_unique<Process>();
  if (absl::Status s = p.proc->Start(BinaryPath(p.binary), p.args, p.log); !s.ok()) return s;
  if (!options_.pids_file.empty()) {
    std::ofstream(options_.pids_file, std::ios::app) << p.proc->pid() << "\n";
  }
  if (!p.serves) return absl::OkStatus();
  absl::Status serving =
      WaitForServingTls(p.address(), client_tls(), options_.serving_timeout, p.health_service);
  if (!serving.ok()) {
    return absl::DeadlineExceededError(absl::StrCat(
        p.name, " did not serve on ", p.address(), " within ",
        absl::FormatDuration(options_.serving_timeout), " (see ", p.log, "): ", serving.message()));
  }
  return absl::OkStatus();
}

void Stack::StopProcess(StackProcess& p) {
  if (p.proc->pid() <= 0 || !p.proc->running()) return;
  p.proc->Signal(SIGTERM);
  if (!p.proc->Wait(absl::Seconds(10)).ok()) p.proc->Kill();
}

void Stack::KillProcess(StackProcess& p) {
  if (p.proc->pid() > 0) p.proc->Kill();
}

absl::Status Stack::StartExecutor(const std::string& app, const std::string& executor_token,
                                  bool allow_scripts) {
  ExecutorSpec spec;
  spec.app = app;
  spec.token = executor_token;
  spec.allow_scripts = allow_scripts;
  const std::string token_file = WriteFile(dir_ + "/executor-" + app, executor_token + "\n");
  return StartExecutorProcess(spec, token_file);
}

absl::StatusOr<int> Stack::AddExecutor(const ExecutorSpec& spec) {
  const int index = static_cast<int>(executors_.size());
  std::string token_file = executor_file_;
  if (!spec.token.empty() || executor_file_.empty()) {
    std::string token = spec.token;
    if (token.empty()) {
      auto created = CreateToken(absl::StrCat("executor-", spec.app, "-", index),
                                 jobwheel::v1::ROLE_EXECUTOR, {spec.app});
      if (!created.ok()) return created.status();
      token = *created;
    }
    token_file = WriteFile(absl::StrCat(dir_, "/executor-", spec.app, "-", index), token + "\n");
  }
  absl::Status s = StartExecutorProcess(spec, token_file);
  if (!s.ok()) return s;
  s = WaitExecutorOnline(spec.app, executor(index), options_.serving_timeout);
  if (!s.ok()) return s;
  return index;
}

absl::Status Stack::StartExecutorProcess(const ExecutorSpec& spec, const std::string& token_file) {
  const int index = static_cast<int>(executors_.size());
  auto owned = std::make_unique<StackProcess>();
  StackProcess& e = *owned;
  executors_.push_back(std::move(owned));
  e.port = PickFreePort();
  e.name = index == 0 ? "executor" : absl::StrCat("executor-", index);
  e.binary = kDemoExecutorBinary;
  e.args = {"--listen=" + e.address(),
            "--app=" + spec.app,
            "--registry_target=" + registry(0),
            "--dispatcher_target=" + dispatcher(0),
            MetricsFlag(e),
            "--log_dir=" + executor_log_dir(index),
            "--spool_dir=" + dir_ + "/exec-spool" + (index == 0 ? "" : absl::StrCat("-", index)),
            "--executions_file=" + dir_ + "/" + e.name + ".executions",
            "--executor_token_file=" + token_file};
  Append(e.args, caller_keys_.ExecutorFlags());
  if (spec.allow_scripts) e.args.push_back("--allow_scripts");
  Append(e.args, TlsServerFlags());
  Append(e.args, TlsClientFlags());
  Append(e.args, spec.extra_flags);
  if (absl::Status app = EnsureApp(spec.app); !app.ok()) return app;
  return Start(e);
}

absl::Status Stack::EnsureApp(const std::string& app) const {
  if (app.empty()) return absl::OkStatus();
  auto stub = jobwheel::v1::AppAdminService::NewStub(Channel(registry()));
  grpc::Status s;
  // The registry may still be starting: retried while unavailable.
  const bool done = Eventually(
      [&] {
        jobwheel::v1::CreateAppRequest req;
        req.mutable_app()->set_name(app);
        jobwheel::v1::CreateAppResponse resp;
        s = stub->CreateApp(Ctx(admin_token_).get(), req, &resp);
        return s.error_code() != grpc::StatusCode::UNAVAILABLE;
      },
      absl::Seconds(20));
  if (!done || (!s.ok() && s.error_code() != grpc::StatusCode::ALREADY_EXISTS)) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        absl::StrCat("CreateApp ", app, ": ", s.error_message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<StackProcess*> Stack::StartConsole(const ConsoleSpec& spec) {
  auto owned = std::make_unique<StackProcess>();
  StackProcess& c = *owned;
  consoles_.push_back(std::move(owned));
  c.name = spec.name;
  c.binary = kConsoleBinary;
  c.port = PickFreePort();
  c.args = {"--listen=" + c.address(),
            "--scheduler_target=" +
                (spec.scheduler_target.empty() ? scheduler(0) : spec.scheduler_target),
            "--registry_target=" + registry(0), MetricsFlag(c)};
  Append(c.args, TlsClientFlags());
  Append(c.args, spec.extra_flags);
  if (absl::Status s = StartConsoleProcess(c); !s.ok()) return s;
  return &c;
}

absl::Status Stack::StartConsoleProcess(StackProcess& c) {
  c.log = absl::StrCat(dir_, "/", c.name, ".log");
  c.proc = std::make_unique<Process>();
  if (absl::Status s = c.proc->Start(BinaryPath(c.binary), c.args, c.log); !s.ok()) return s;
  if (!options_.pids_file.empty()) {
    std::ofstream(options_.pids_file, std::ios::app) << c.proc->pid() << "\n";
  }
  httplib::Client client("127.0.0.1", c.port);
  client.set_connection_timeout(0, 200000);
  client.set_read_timeout(15, 0);
  const bool healthy = Eventually(
      [&] {
        auto res = client.Get("/healthz");
        return res && res->status == 200;
      },
      options_.serving_timeout);
  if (!healthy) {
    return absl::DeadlineExceededError(
        absl::StrCat(c.name, " never answered /healthz:\n", ReadFile(c.log)));
  }
  return absl::OkStatus();
}

std::string Stack::ExecutorCallerToken(absl::string_view issuer, absl::string_view app,
                                       absl::string_view address) const {
  return CallerToken(issuer, ExecutorAudience(app, address));
}

absl::StatusOr<std::string> Stack::ExecutorInstance(const std::string& app,
                                                    const std::string& address) const {
  auto stub = jobwheel::v1::RegistryService::NewStub(Channel(registry()));
  jobwheel::v1::ListExecutorsRequest req;
  req.set_app(app);
  jobwheel::v1::ListExecutorsResponse resp;
  grpc::Status s = stub->ListExecutors(Ctx(admin_token_).get(), req, &resp);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        absl::StrCat("ListExecutors ", app, ": ", s.error_message()));
  }
  for (const auto& e : resp.executors()) {
    if (e.address() == address) return e.instance();
  }
  return absl::NotFoundError(absl::StrCat("executor ", app, "/", address, " is not online"));
}

std::string Stack::CallerToken(absl::string_view issuer, absl::string_view audience) const {
  const std::string& key =
      issuer == "scheduler" ? caller_keys_.scheduler_key : caller_keys_.dispatcher_key;
  absl::StatusOr<std::string> token = SignCallerToken(key, issuer, audience);
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
  const bool online = Eventually(
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

absl::Status Stack::WaitLeader(int index, absl::Duration timeout) const {
  auto stub = jobwheel::v1::LeadershipService::NewStub(Channel(scheduler(index)));
  std::string last;
  const bool leads = Eventually(
      [&] {
        jobwheel::v1::GetLeaderResponse r;
        grpc::Status s = stub->GetLeader(Ctx(admin_token_).get(), {}, &r);
        last = s.ok() ? absl::StrCat("leader: ", r.holder_id()) : s.error_message();
        return s.ok() && r.is_leader();
      },
      timeout);
  if (leads) return absl::OkStatus();
  return absl::DeadlineExceededError(
      absl::StrCat(schedulers_[index]->name, " never became leader (", last, ")"));
}

std::string Stack::executor(int i) const {
  return i < static_cast<int>(executors_.size()) ? executors_[i]->address() : "";
}

std::string Stack::executor_log_dir(int i) const {
  return i == 0 ? dir_ + "/exec-logs" : absl::StrCat(dir_, "/exec-logs-", i);
}

std::vector<Execution> Stack::Executions(int i) const {
  if (i >= static_cast<int>(executors_.size())) return {};
  return ReadExecutions(dir_ + "/" + executors_[i]->name + ".executions");
}

std::vector<Execution> Stack::Executions() const {
  std::vector<Execution> all;
  for (int i = 0; i < static_cast<int>(executors_.size()); ++i) {
    for (Execution& e : Executions(i)) all.push_back(std::move(e));
  }
  return all;
}

void Stack::Stop() {
  // Executors and consoles first, then schedulers, dispatchers, registries: each group gets
  // SIGTERM at once, and SIGKILL after 10 s.
  std::vector<std::vector<StackProcess*>> groups(4);
  for (auto* group : {&consoles_, &executors_}) {
    for (auto& p : *group) groups[0].push_back(p.get());
  }
  for (auto& p : schedulers_) groups[1].push_back(p.get());
  for (auto& p : dispatchers_) groups[2].push_back(p.get());
  for (auto& p : registries_) groups[3].push_back(p.get());
  for (const std::vector<StackProcess*>& group : groups) {
    for (StackProcess* p : group) {
      if (p->proc->pid() > 0 && p->proc->running()) p->proc->Signal(SIGTERM);
    }
    for (StackProcess* p : group) {
      if (p->proc->pid() > 0 && !p->proc->Wait(absl::Seconds(10)).ok()) p->proc->Kill();
    }
  }
}

std::string Stack::Logs() const {
  std::string out;
  for (auto* group : {&registries_, &dispatchers_, &schedulers_, &executors_, &consoles_}) {
    for (const auto& p : *group) {
      if (p->log.empty()) continue;
      std::string text = ReadFile(p->log);
      if (text.size() > 3000) text = text.substr(text.size() - 3000);
      absl::StrAppend(&out, "---- ", p->name, ".log (tail)\n", text, "\n");
    }
  }
  return out;
}

}  // namespace jobwheel::testing
