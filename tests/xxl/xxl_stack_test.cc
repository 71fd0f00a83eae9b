#include "tests/xxl/xxl_stack_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/testing/process.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "httplib.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "jobwheel/v1/token_admin.pb.h"

namespace jobwheel::xxl_test {

using testing::Ctx;
using testing::Eventually;

namespace {

bool Bindable(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

int FreePortRange(int n) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    const int base = testing::PickFreePort();
    if (base + n > 65535) continue;
    bool all = true;
    for (int p = base; p < base + n && all; ++p) all = Bindable(p);
    if (all) return base;
  }
  return testing::PickFreePort();
}

void XxlStackTest::SetUp() {
  StackTest::SetUp();
  if (HasFatalFailure()) return;
  ASSERT_TRUE(stack_->EnsureApp(kApp).ok());
  auto token = stack_->CreateToken("xxl-exec", jobwheel::v1::ROLE_EXECUTOR, {kApp});
  ASSERT_TRUE(token.ok()) << token.status();
  token_ = *token;
  http_port_ = testing::PickFreePort();
  port_from_ = FreePortRange(4);
  gateway_.name = "xxl_gateway";
  gateway_.binary = "services/xxl_gateway/xxl_gateway";
  gateway_.serves = false;
  gateway_.port = http_port_;
  gateway_.args = {"--listen_http=127.0.0.1:" + std::to_string(http_port_),
                   absl::StrCat("--executor_ports=", port_from_, "-", port_from_ + 3),
                   "--registry_target=" + stack_->registry(),
                   "--dispatcher_target=" + stack_->dispatcher(),
                   "--state_dir=" + stack_->dir() + "/xxl-state",
                   "--app_handlers=xxl-demo=echo|sleep|stubborn|fail|code|shard|nosuch",
                   "--metrics_address="};
  for (const std::string& f : stack_->caller_keys().ExecutorFlags()) gateway_.args.push_back(f);
  StartGateway();
}

void XxlStackTest::TearDown() {
  for (auto& p : xxl_) testing::Stack::StopProcess(*p);
  testing::Stack::StopProcess(gateway_);
  if (HasFailure()) {
    for (const auto& p : xxl_) std::cerr << "---- " << p->log << "\n" << testing::ReadFile(p->log);
    std::cerr << "---- gateway\n" << testing::ReadFile(gateway_.log);
  }
  StackTest::TearDown();
}

void XxlStackTest::StartGateway() {
  ASSERT_TRUE(stack_->Start(gateway_).ok());
  ASSERT_TRUE(Eventually(
      [&] {
        httplib::Client c("127.0.0.1", http_port_);
        auto r = c.Get("/healthz");
        return r && r->status == 200;
      },
      absl::Seconds(20)))
      << testing::ReadFile(gateway_.log);
}

std::string XxlStackTest::XxlUrl(int i) const {
  return absl::StrCat("http://127.0.0.1:", xxl_ports_[i]);
}

void XxlStackTest::StartXxl(int i, const std::string& token, const std::string& envelope,
                            const std::string& app) {
  while (static_cast<int>(xxl_.size()) <= i) {
    xxl_.push_back(std::make_unique<testing::StackProcess>());
    xxl_ports_.push_back(testing::PickFreePort());
  }
  testing::StackProcess& p = *xxl_[i];
  const std::string dir = absl::StrCat(stack_->dir(), "/xxl", i);
  p.name = absl::StrCat("xxl", i);
  p.binary = "tests/xxl/xxl_test_executor.py";
  p.serves = false;
  p.port = xxl_ports_[i];
  std::string admins = absl::StrCat("http://127.0.0.1:", http_port_, "/xxl-job-admin");
  for (int port : more_admin_ports_) absl::StrAppend(&admins, ",http://127.0.0.1:", port, "/");
  p.args = {absl::StrCat("--port=", xxl_ports_[i]),
            "--admin=" + admins,
            "--app=" + app,
            "--envelope=" + envelope,
            "--log_dir=" + dir + "/logs",
            "--spool_dir=" + dir + "/spool",
            "--executions_file=" + dir + ".executions",
            "--register_interval=2"};
  if (!token.empty()) p.args.push_back("--token=" + token);
  ASSERT_TRUE(stack_->Start(p).ok());
}

std::vector<testing::Execution> XxlStackTest::XxlExecutions(int i) const {
  return testing::ReadExecutions(absl::StrCat(stack_->dir(), "/xxl", i, ".executions"));
}

absl::StatusOr<jobwheel::v1::Executor> XxlStackTest::Listed(int i) {
  auto stub = jobwheel::v1::RegistryService::NewStub(stack_->Channel(stack_->registry()));
  jobwheel::v1::ListExecutorsRequest req;
  req.set_app(kApp);
  jobwheel::v1::ListExecutorsResponse resp;
  grpc::Status s = stub->ListExecutors(Ctx(stack_->admin_token()).get(), req, &resp);
  if (!s.ok()) return absl::UnavailableError(s.error_message());
  for (const auto& e : resp.executors()) {
    auto it = e.labels().find("xxl.address");
    if (it != e.labels().end() && it->second == XxlUrl(i)) return e;
  }
  return absl::NotFoundError(absl::StrCat(XxlUrl(i), " not listed"));
}

absl::StatusOr<std::string> XxlStackTest::AwaitOnline(int i, absl::Duration timeout) {
  std::string address;
  const bool ok = Eventually(
      [&] {
        auto e = Listed(i);
        if (!e.ok()) return false;
        address = e->address();
        return true;
      },
      timeout);
  if (!ok) return absl::DeadlineExceededError(absl::StrCat(XxlUrl(i), " never online"));
  return address;
}

XxlAdminAnswer XxlStackTest::AdminPost(const std::string& path, const std::string& body,
                                       const std::string& token) {
  httplib::Client c("127.0.0.1", http_port_);
  httplib::Headers h;
  if (!token.empty()) h.emplace("XXL-JOB-ACCESS-TOKEN", token);
  auto r = c.Post(path.c_str(), h, body, "application/json");
  XxlAdminAnswer out;
  if (!r) return out;
  google::protobuf::Struct answer;
  if (!google::protobuf::util::JsonStringToMessage(r->body, &answer).ok()) return out;
  out.code = static_cast<int>(answer.fields().at("code").number_value());
  auto msg = answer.fields().find("msg");
  if (msg != answer.fields().end()) out.msg = msg->second.string_value();
  return out;
}

jobwheel::v1::Job XxlStackTest::XxlJob(const std::string& name, const std::string& handler,
                                       const std::string& param) {
  jobwheel::v1::Job job = e2e::NewJob(name, handler, param);
  job.set_app(kApp);
  return job;
}

}  // namespace jobwheel::xxl_test
