// The HTTP executor on a real stack (registry, dispatcher, scheduler) against an HTTP server
// this test runs on loopback (allow-listed by host:port): a call that succeeds and logs the
// status, headers and body; an unexpected status that fails; a job timeout and a kill that
// abort the transfer (the server sees the client go); a job aimed at 169.254.169.254 and a
// redirect from the allowed server to it, both failing with the rule named and never
// connecting; and a run for another app refused by the executor. Each call is counted on the
// server: each run executes once.
#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/process.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "tests/e2e/stack_test.h"

namespace jobwheel::e2e {
namespace {

using ::jobwheel::testing::Ctx;
using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::StackProcess;
using RunProto = jobwheel::v1::Run;

constexpr char kHttpExecutorBinary[] = "services/http_executor/http_executor";

// The endpoint HTTP jobs call: counts requests per path.
class TestServer {
 public:
  TestServer() {
    server_.Get("/ok", [this](const httplib::Request& req, httplib::Response& res) {
      Count("/ok");
      {
        absl::MutexLock lock(&mu_);
        last_run_header_ = req.get_header_value("X-Jobwheel-Run");
      }
      res.set_header("X-Test", "yes");
      res.set_content("hello from the test server\nsecond line", "text/plain");
    });
    server_.Get("/unavailable", [this](const httplib::Request&, httplib::Response& res) {
      Count("/unavailable");
      res.status = 503;
      res.set_content("down for maintenance", "text/plain");
    });
    server_.Get("/to-metadata", [this](const httplib::Request&, httplib::Response& res) {
      Count("/to-metadata");
      res.status = 302;
      res.set_header("Location", "http://169.254.169.254/latest/meta-data/");
    });
    server_.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      Count("/slow");
      res.set_chunked_content_provider("text/plain", [this](size_t, httplib::DataSink& sink) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (sink.write(".", 1)) return true;
        ++clients_gone_;
        return false;
      });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~TestServer() {
    while (!server_.is_running()) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::string Url(const std::string& path) const {
    return absl::StrCat("http://127.0.0.1:", port_, path);
  }
  int Hits(const std::string& path) {
    absl::MutexLock lock(&mu_);
    return hits_[path];
  }
  int clients_gone() const { return clients_gone_.load(); }
  std::string last_run_header() {
    absl::MutexLock lock(&mu_);
    return last_run_header_;
  }

 private:
  void Count(const std::string& path) {
    absl::MutexLock lock(&mu_);
    ++hits_[path];
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::map<std::string, int> hits_ ABSL_GUARDED_BY(mu_);
  std::string last_run_header_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> clients_gone_{0};
};

class HttpExecutorTest : public StackTest {
 protected:
  std::vector<Stack::ExecutorSpec> ExecutorSpecs() const override { return {}; }

  void SetUp() override {
    StackTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(stack_->EnsureApp("http").ok());
    auto token = stack_->CreateToken("http-executor", jobwheel::v1::ROLE_EXECUTOR, {"http"});
    ASSERT_TRUE(token.ok()) << token.status();
    const std::string token_file =
        testing::WriteFile(stack_->dir() + "/http-executor.token", *token + "\n");
    executor_.name = "http_executor";
    executor_.binary = kHttpExecutorBinary;
    executor_.port = testing::PickFreePort();
    executor_.args = {"--listen=" + executor_.address(),
                      "--app=http",
                      "--registry_target=" + stack_->registry(),
                      "--dispatcher_target=" + stack_->dispatcher(),
                      "--metrics_address=",
                      "--log_dir=" + stack_->dir() + "/http-logs",
                      "--spool_dir=" + stack_->dir() + "/http-spool",
                      "--executor_token_file=" + token_file,
                      absl::StrCat("--allow_hosts=127.0.0.1:", server_.port())};
    for (const std::string& f : stack_->ExecutorFlags()) executor_.args.push_back(f);
    absl::Status s = stack_->Start(executor_);
    ASSERT_TRUE(s.ok()) << s;
    s = stack_->WaitExecutorOnline("http", executor_.address(), absl::Seconds(20));
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    Stack::StopProcess(executor_);
    if (HasFailure()) std::cerr << testing::ReadFile(executor_.log);
    StackTest::TearDown();
  }

  absl::StatusOr<int64_t> HttpJob(const std::string& name, const std::string& param,
                                  absl::Duration timeout = absl::ZeroDuration()) {
    jobwheel::v1::Job job = NewJob(name, "http", param);
    job.set_app("http");
    if (timeout > absl::ZeroDuration()) *job.mutable_timeout() = ToProtoDuration(timeout);
    auto created = CreateJob(job);
    if (!created.ok()) return created.status();
    auto fired = TriggerJob(created->id());
    if (!fired.ok()) return fired.status();
    return created->id();
  }
  absl::StatusOr<RunProto> Ended(int64_t job_id, absl::Duration timeout = absl::Seconds(30)) {
    return AwaitRun(
        job_id,
        [](const RunProto& r) {
          return r.status() != jobwheel::v1::RUN_STATUS_PENDING &&
                 r.status() != jobwheel::v1::RUN_STATUS_RUNNING;
        },
        timeout);
  }
  std::string Log(int64_t run_id) { return absl::StrJoin(RunLog(run_id), "\n"); }

  TestServer server_;
  StackProcess executor_;
};

std::string Describe(const RunProto& r) {
  return absl::StrCat(jobwheel::v1::RunStatus_Name(r.status()), ": ", r.result_message());
}

TEST_F(HttpExecutorTest, CallsSucceedOrFailOnTheStatusAndInternalTargetsAreRefused) {
  auto ok = HttpJob("ok", absl::StrCat(R"({"url":")", server_.Url("/ok"), R"("})"));
  auto bad = HttpJob("bad", absl::StrCat(R"({"url":")", server_.Url("/unavailable"), R"("})"));
  auto metadata = HttpJob("metadata", R"({"url":"http://169.254.169.254/latest/meta-data/"})");
  auto redirect = HttpJob("redirect", absl::StrCat(R"({"url":")", server_.Url("/to-metadata"),
                                                   R"(","follow_redirects":true})"));
  ASSERT_TRUE(ok.ok() && bad.ok() && metadata.ok() && redirect.ok()) << ok.status();

  auto run = Ended(*ok);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_SUCCEEDED) << Describe(*run);
  EXPECT_NE(run->result_message().find("HTTP 200"), std::string::npos) << Describe(*run);
  const std::string log = Log(run->id());
  EXPECT_NE(log.find("HTTP 200 from " + server_.Url("/ok")), std::string::npos) << log;
  EXPECT_NE(log.find("< X-Test: yes"), std::string::npos) << log;
  EXPECT_NE(log.find("| hello from the test server"), std::string::npos) << log;
  EXPECT_NE(log.find("| second line"), std::string::npos) << log;
  EXPECT_EQ(server_.last_run_header(), absl::StrCat(run->id()));  // X-Jobwheel-Run.

  run = Ended(*bad);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_FAILED) << Describe(*run);
  EXPECT_NE(run->result_message().find("HTTP 503"), std::string::npos) << Describe(*run);
  EXPECT_NE(run->result_message().find("expected 2xx"), std::string::npos) << Describe(*run);
  EXPECT_NE(Log(run->id()).find("| down for maintenance"), std::string::npos);

  run = Ended(*metadata);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_FAILED) << Describe(*run);
  EXPECT_NE(run->result_message().find("refused by rule \"metadata\""), std::string::npos)
      << Describe(*run);

  run = Ended(*redirect);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_FAILED) << Describe(*run);
  EXPECT_NE(run->result_message().find(
                "redirect 1 to http://169.254.169.254/latest/meta-data/: connection to "
                "169.254.169.254:80 refused by rule \"metadata\""),
            std::string::npos)
      << Describe(*run);

  // Executed once each (the refused one never reached any server).
  EXPECT_EQ(server_.Hits("/ok"), 1);
  EXPECT_EQ(server_.Hits("/unavailable"), 1);
  EXPECT_EQ(server_.Hits("/to-metadata"), 1);
  // A loopback target that is not allow-listed (another port of the same host).
  auto other_port = HttpJob("other-port", R"({"url":"http://127.0.0.1:1/"})");
  ASSERT_TRUE(other_port.ok());
  run = Ended(*other_port);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_FAILED) << Describe(*run);
  EXPECT_NE(run->result_message().find("refused by rule \"loopback\""), std::string::npos)
      << Describe(*run);
}

TEST_F(HttpExecutorTest, TimeoutAndKillAbortTheTransfer) {
  // The job's timeout (2 s) ends a call that would stream forever.
  auto timed = HttpJob("timed", absl::StrCat(R"({"url":")", server_.Url("/slow"), R"("})"),
                       absl::Seconds(2));
  ASSERT_TRUE(timed.ok()) << timed.status();
  auto run = Ended(*timed);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_TIMED_OUT) << Describe(*run);
  EXPECT_TRUE(Eventually([&] { return server_.clients_gone() >= 1; }, absl::Seconds(5)))
      << "the transfer went on after the timeout";

  // A kill while the call streams.
  auto killed = HttpJob("killed", absl::StrCat(R"({"url":")", server_.Url("/slow"), R"("})"));
  ASSERT_TRUE(killed.ok()) << killed.status();
  ASSERT_TRUE(Eventually([&] { return server_.Hits("/slow") >= 2; }, absl::Seconds(20)));
  auto running = AwaitRun(
      *killed, [](const RunProto& r) { return r.status() == jobwheel::v1::RUN_STATUS_RUNNING; },
      absl::Seconds(10));
  ASSERT_TRUE(running.ok()) << running.status();
  jobwheel::v1::KillRunRequest kill;
  kill.set_id(running->id());
  jobwheel::v1::KillRunResponse kill_resp;
  grpc::Status s = admin_->KillRun(Ctx(stack_->admin_token()).get(), kill, &kill_resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  run = Ended(*killed, absl::Seconds(15));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_KILLED) << Describe(*run);
  EXPECT_TRUE(Eventually([&] { return server_.clients_gone() >= 2; }, absl::Seconds(5)))
      << "the transfer went on after the kill";
  EXPECT_NE(Log(run->id()).find("transfer aborted"), std::string::npos) << Log(run->id());
  EXPECT_EQ(server_.Hits("/slow"), 2);
}

TEST_F(HttpExecutorTest, ARunForAnotherAppIsRefused) {
  auto instance = stack_->ExecutorInstance("http", executor_.address());
  ASSERT_TRUE(instance.ok()) << instance.status();
  auto stub = jobwheel::v1::ExecutorService::NewStub(stack_->Channel(executor_.address()));
  auto send = [&](const std::string& app) {
    jobwheel::v1::RunRequest req;
    req.set_app(app);
    req.set_executor_instance(*instance);
    req.set_run_id(900001);
    req.set_job_id(9001);
    req.set_fire_id(90001);
    req.set_handler("http");
    req.set_param(absl::StrCat(R"({"url":")", server_.Url("/ok"), R"("})"));
    req.set_result_key(std::string(32, 'k'));
    jobwheel::v1::RunResponse resp;
    auto ctx = Ctx(stack_->ExecutorCallerToken("dispatcher", "http", executor_.address()));
    grpc::Status st = stub->Run(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  };
  jobwheel::v1::RunResponse other = send("demo");
  EXPECT_EQ(other.disposition(), jobwheel::v1::RUN_DISPOSITION_REJECTED) << other.message();
  EXPECT_NE(other.message().find("app \"demo\""), std::string::npos) << other.message();
  EXPECT_EQ(server_.Hits("/ok"), 0);
}

}  // namespace
}  // namespace jobwheel::e2e
