// A fast XXL-JOB-protocol executor for the xxl bench line (tests/xxl/bench_xxl.sh), written from
// the protocol (docs/xxl-job.md). The functional tests keep tests/xxl/xxl_test_executor.py; this
// one only has to keep up with 1000 runs/s: every /run succeeds at once.
//
// It serves the executor side (POST /beat /idleBeat /run /kill /log, each checked against the
// XXL-JOB-ACCESS-TOKEN header), registers with the admin (--admin: the XXL gateway) every
// --register_interval_s (/api/registry; /api/registryRemove at SIGTERM/SIGINT), and calls back
// every run as succeeded (/api/callback, batched every few ms; a batch the admin did not take is
// sent again, so no result is dropped). With --arrivals_file every /run that arrives appends
// "logId arrival_us" (wall clock), as tests/xxl/xxl_test_executor.py does.

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/json_escape.h"
#include "common/server/http_listener.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "httplib.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "address to serve on");
ABSL_FLAG(int, port, 0, "port to serve on (required)");
ABSL_FLAG(std::string, address, "", "registryValue (default http://host:port/)");
ABSL_FLAG(std::string, admin, "", "admin base URLs, comma-separated (required)");
ABSL_FLAG(std::string, app, "", "the app (registryKey) to register as (required)");
ABSL_FLAG(std::string, token_file, "", "file holding the XXL-JOB-ACCESS-TOKEN (required)");
ABSL_FLAG(int, envelope, 2, "reply envelope: 2 (ReturnT: content) or 3 (Response: data)");
ABSL_FLAG(std::string, arrivals_file, "", "appends \"logId arrival_us\" for every /run");
ABSL_FLAG(double, register_interval_s, 30, "seconds between registrations");
ABSL_FLAG(double, callback_batch_ms, 5, "milliseconds callbacks are gathered before a POST");

namespace jobwheel::xxl {
namespace {

struct Admin {
  std::string origin;  // scheme://host:port
  std::string prefix;  // the path before /api/..., e.g. /xxl-job-admin
};

// "http://h:p/prefix" → {http://h:p, /prefix}.
Admin ParseAdmin(absl::string_view url) {
  url = absl::StripSuffix(url, "/");
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == absl::string_view::npos ? 0 : scheme + 3);
  if (slash == absl::string_view::npos) return {std::string(url), ""};
  return {std::string(url.substr(0, slash)), std::string(url.substr(slash))};
}

// A number field of a JSON object (0 when absent or not a number).
int64_t NumberField(const google::protobuf::Struct& body, const std::string& name) {
  const auto it = body.fields().find(name);
  if (it == body.fields().end()) return 0;
  if (it->second.has_number_value()) return static_cast<int64_t>(it->second.number_value());
  if (it->second.has_string_value()) return std::atoll(it->second.string_value().c_str());
  return 0;
}

// Posts to the admins with kept-alive connections; one per thread (httplib::Client is not
// thread-safe).
class AdminPoster {
 public:
  AdminPoster(std::vector<Admin> admins, std::string token)
      : admins_(std::move(admins)), token_(std::move(token)) {
    for (const Admin& admin : admins_) {
      clients_.push_back(std::make_unique<httplib::Client>(admin.origin));
      clients_.back()->set_keep_alive(true);
      clients_.back()->set_tcp_nodelay(true);
      clients_.back()->set_connection_timeout(3);
      clients_.back()->set_read_timeout(3);
    }
  }

  // POST prefix+path to the first admin that answers code 200.
  bool Post(absl::string_view path, const std::string& body) {
    for (size_t i = 0; i < admins_.size(); ++i) {
      httplib::Client& client = *clients_[i];
      const std::string target = absl::StrCat(admins_[i].prefix, path);
      httplib::Headers headers = {{"XXL-JOB-ACCESS-TOKEN", token_}};
      auto res = client.Post(target.c_str(), headers, body, "application/json;charset=UTF-8");
      if (res && res->status == 200 && res->body.find("\"code\":200") != std::string::npos) {
        return true;
      }
      std::cerr << "admin " << admins_[i].origin << target << ": "
                << (res ? absl::StrCat(res->status, " ", res->body)
                        : httplib::to_string(res.error()))
                << std::endl;
    }
    return false;
  }

 private:
  const std::vector<Admin> admins_;
  const std::string token_;
  std::vector<std::unique_ptr<httplib::Client>> clients_;
};

class BenchExecutor {
 public:
  BenchExecutor(std::vector<Admin> admins, std::string token, int envelope, FILE* arrivals)
      : poster_(std::move(admins), token),
        token_(std::move(token)),
        envelope_(envelope),
        arrivals_(arrivals) {}

  std::string Envelope(int code, absl::string_view msg, absl::string_view payload = "") const {
    std::string out = absl::StrCat("{\"code\":", code);
    if (envelope_ == 2) {
      if (!msg.empty()) absl::StrAppend(&out, ",\"msg\":\"", JsonEscape(msg), "\"");
      if (!payload.empty()) absl::StrAppend(&out, ",\"content\":", payload);
    } else {
      absl::StrAppend(&out, ",\"msg\":\"", msg.empty() ? "Success" : JsonEscape(msg),
                      "\",\"data\":", payload.empty() ? "null" : payload);
    }
    return out + "}";
  }

  void Serve(const httplib::Request& req, httplib::Response& res) {
    const int64_t at_us = absl::ToUnixMicros(absl::Now());
    res.set_content(Answer(req, at_us), "application/json;charset=UTF-8");
  }

  // Posts the gathered callbacks every batch interval until `stop`, then once more.
  void CallbackLoop(absl::Duration batch, absl::Notification& stop) {
    std::vector<std::string> pending;
    bool last = false;
    while (!last) {
      last = stop.WaitForNotificationWithTimeout(batch);
      {
        absl::MutexLock lock(&mu_);
        for (std::string& item : callbacks_) pending.push_back(std::move(item));
        callbacks_.clear();
      }
      if (pending.empty()) continue;
      const std::string body = absl::StrCat("[", absl::StrJoin(pending, ","), "]");
      if (poster_.Post("/api/callback", body)) {
        pending.clear();
      } else if (!last) {
        stop.WaitForNotificationWithTimeout(absl::Seconds(1));  // The admin is away: retry.
      }
    }
  }

 private:
  std::string Answer(const httplib::Request& req, int64_t at_us) {
    const auto token = req.headers.find("XXL-JOB-ACCESS-TOKEN");
    if (token == req.headers.end() || token->second != token_) {
      return Envelope(500, "The access token is wrong.");
    }
    google::protobuf::Struct body;
    if (!req.body.empty() && !google::protobuf::util::JsonStringToMessage(req.body, &body).ok()) {
      body.Clear();
    }
    if (req.path == "/beat" || req.path == "/idleBeat") return Envelope(200, "");
    if (req.path == "/kill") {
      return envelope_ == 2 ? Envelope(200, "job thread already killed.")
                            : Envelope(200, "", "\"job thread already killed.\"");
    }
    if (req.path == "/log") {
      return Envelope(200, "",
                      absl::StrCat("{\"fromLineNum\":", NumberField(body, "fromLineNum"),
                                   ",\"toLineNum\":0,\"logContent\":\"readLog fail, logFile not "
                                   "exists\",\"isEnd\":true}"));
    }
    if (req.path != "/run") {
      return Envelope(500, absl::StrCat("invalid request, uri-mapping(", req.path, ") not found."));
    }
    const int64_t log_id = NumberField(body, "logId");
    const int64_t log_date_time = NumberField(body, "logDateTime");
    absl::MutexLock lock(&mu_);
    if (arrivals_ != nullptr) {
      std::fprintf(arrivals_, "%lld %lld\n", static_cast<long long>(log_id),
                   static_cast<long long>(at_us));
      std::fflush(arrivals_);
    }
    callbacks_.push_back(absl::StrCat("{\"logId\":", log_id, ",\"logDateTim\":", log_date_time,
                                      ",\"handleCode\":200,\"handleMsg\":\"ok\"}"));
    return Envelope(200, "");
  }

  AdminPoster poster_;
  const std::string token_;
  const int envelope_;
  FILE* const arrivals_;
  absl::Mutex mu_;
  std::vector<std::string> callbacks_ ABSL_GUARDED_BY(mu_);
};

int Main() {
  const int port = absl::GetFlag(FLAGS_port);
  const std::string host = absl::GetFlag(FLAGS_host);
  const std::string app = absl::GetFlag(FLAGS_app);
  const int envelope = absl::GetFlag(FLAGS_envelope);
  if (port <= 0 || port > 65535) return std::cerr << "--port: want 1..65535\n", 2;
  if (app.empty()) return std::cerr << "--app: required\n", 2;
  if (envelope != 2 && envelope != 3) return std::cerr << "--envelope: want 2 or 3\n", 2;
  std::vector<Admin> admins;
  for (absl::string_view url : absl::StrSplit(absl::GetFlag(FLAGS_admin), ',', absl::SkipEmpty())) {
    admins.push_back(ParseAdmin(url));
  }
  if (admins.empty()) return std::cerr << "--admin: required\n", 2;
  std::ifstream token_in(absl::GetFlag(FLAGS_token_file));
  std::stringstream token_text;
  token_text << token_in.rdbuf();
  const std::string token(absl::StripAsciiWhitespace(token_text.str()));
  if (token.empty()) return std::cerr << "--token_file: missing or empty\n", 2;
  FILE* arrivals = nullptr;
  if (!absl::GetFlag(FLAGS_arrivals_file).empty()) {
    arrivals = std::fopen(absl::GetFlag(FLAGS_arrivals_file).c_str(), "a");
    if (arrivals == nullptr) return std::cerr << "--arrivals_file: cannot open\n", 2;
  }
  std::string address = absl::GetFlag(FLAGS_address);
  if (address.empty()) address = absl::StrCat("http://", host, ":", port, "/");

  // The signals are awaited by the main thread (sigwait): blocked before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  BenchExecutor executor(admins, token, envelope, arrivals);
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(32); };
  // Each answer at once (no Nagle wait for the ACK of its header), and a kept-alive
  // connection serves many /run calls, as an XXL executor's Netty server does.
  server.set_tcp_nodelay(true);
  server.set_keep_alive_max_count(100000);
  server.Post(R"(/.*)", [&executor](const httplib::Request& req, httplib::Response& res) {
    executor.Serve(req, res);
  });
  server.Get(R"(/.*)", [&executor](const httplib::Request&, httplib::Response& res) {
    res.set_content(executor.Envelope(500, "invalid request, HttpMethod not support."),
                    "application/json;charset=UTF-8");
  });
  HttpListener listener;
  const absl::StatusOr<int> bound =
      listener.Start(server, host, port, "--port", absl::StrCat(host, ":", port));
  if (!bound.ok()) return std::cerr << bound.status() << "\n", 1;

  const std::string registry = absl::StrCat("{\"registryGroup\":\"EXECUTOR\",\"registryKey\":\"",
                                            app, "\",\"registryValue\":\"", address, "\"}");
  absl::Notification stop;
  std::thread callbacks([&] {
    executor.CallbackLoop(absl::Milliseconds(absl::GetFlag(FLAGS_callback_batch_ms)), stop);
  });
  AdminPoster registrar_poster(admins, token);
  std::thread registrar([&] {
    const absl::Duration interval = absl::Seconds(absl::GetFlag(FLAGS_register_interval_s));
    // A registration the admin did not take is tried again after a second.
    while (!stop.WaitForNotificationWithTimeout(
        registrar_poster.Post("/api/registry", registry) ? interval : absl::Seconds(1))) {
    }
  });
  std::cout << "xxl bench executor " << app << " on " << address << std::endl;
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  stop.Notify();
  registrar.join();
  registrar_poster.Post("/api/registryRemove", registry);
  listener.Stop();
  callbacks.join();
  if (arrivals != nullptr) std::fclose(arrivals);
  return 0;
}

}  // namespace
}  // namespace jobwheel::xxl

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return jobwheel::xxl::Main();
}
