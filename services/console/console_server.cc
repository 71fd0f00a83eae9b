#include "services/console/console_server.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "services/console/connect_error.h"
#include "services/console/route_table.h"
#include "spdlog/spdlog.h"

namespace jobwheel::console {
namespace {

// Whole seconds and the microseconds left over, for httplib's (seconds, microseconds) setters.
std::pair<time_t, time_t> SecondsAndMicros(absl::Duration d) {
  const int64_t micros = absl::ToInt64Microseconds(d);
  return {static_cast<time_t>(micros / 1000000), static_cast<time_t>(micros % 1000000)};
}

// "host:port", "[v6]:port" or ":port" (all interfaces).
absl::Status SplitListen(const std::string& listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), port) ||
      *port < 0 || *port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--listen \"", listen, "\": want host:port"));
  }
  *host = listen.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  if (host->empty()) *host = "0.0.0.0";
  return absl::OkStatus();
}

void ConnectError(httplib::Response& res, const absl::Status& status, int http_status) {
  res.status = http_status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(ConnectErrorJson(status), "application/json");
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& ConsoleServer::SecurityHeaders() {
  static const auto* headers = new std::vector<std::pair<std::string, std::string>>{
      {"Content-Security-Policy",
       "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'"},
      {"X-Frame-Options", "DENY"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
  };
  return *headers;
}

ConsoleServer::ConsoleServer(Options options, const ConnectGateway& gateway,
                             const StaticFiles& pages, ReadyCheck ready, ConsoleMetrics& metrics,
                             const Clock& clock)
    : options_(std::move(options)),
      gateway_(gateway),
      pages_(pages),
      ready_(std::move(ready)),
      metrics_(metrics),
      clock_(clock),
      server_(std::make_unique<httplib::Server>()) {}

ConsoleServer::~ConsoleServer() { Shutdown(); }

absl::Status ConsoleServer::Start() {
  std::string host;
  int port = 0;
  absl::Status s = SplitListen(options_.listen, &host, &port);
  if (!s.ok()) return s;

  httplib::Headers headers;
  for (const auto& [name, value] : SecurityHeaders()) headers.emplace(name, value);
  server_->set_default_headers(std::move(headers));
  server_->set_payload_max_length(options_.max_body_bytes);
  auto [read_s, read_us] = SecondsAndMicros(options_.read_timeout);
  server_->set_read_timeout(read_s, read_us);
  auto [write_s, write_us] = SecondsAndMicros(options_.write_timeout);
  server_->set_write_timeout(write_s, write_us);
  server_->set_keep_alive_timeout(
      std::max<time_t>(1, absl::ToInt64Seconds(options_.keep_alive_timeout)));
  // Room for the Connect requests the gate admits plus pages, health probes, idle keep-alive
  // connections and the requests the gate refuses (which must not queue behind the others).
  const size_t threads = static_cast<size_t>(options_.max_concurrent_requests) + 16;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };

  server_->Post(".*",
                [this](const httplib::Request& req, httplib::Response& res) { Rpc(req, res); });
  server_->Get(".*",
               [this](const httplib::Request& req, httplib::Response& res) { Get(req, res); });
  auto not_allowed = [](const httplib::Request& req, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", RouteTable::IsApiPath(req.path) ? "POST" : "GET, HEAD");
    res.set_content("method not allowed\n", "text/plain; charset=utf-8");
  };
  server_->Put(".*", not_allowed);
  server_->Patch(".*", not_allowed);
  server_->Delete(".*", not_allowed);
  server_->Options(".*", not_allowed);
  server_->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        FillError(req, res);
        return httplib::Server::HandlerResponse::Handled;
      }));
  server_->set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
        spdlog::error("{} {}: handler threw", req.method, req.path);
        ConnectError(res, absl::InternalError("internal error"), 500);
      });
  server_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    if (RouteTable::IsApiPath(req.path) && req.method == "POST") return;  // Rpc() counted it.
    metrics_.Page(res.status);
    spdlog::debug("{} {} {} from {}", req.method, req.path, res.status, req.remote_addr);
  });

  if (port == 0) {
    port_ = server_->bind_to_any_port(host);
    if (port_ < 0) port_ = 0;
  } else if (server_->bind_to_port(host, port)) {
    port_ = port;
  }
  if (port_ == 0) {
    return absl::UnavailableError(absl::StrCat("--listen ", options_.listen, ": cannot bind"));
  }
  started_ = true;
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    listen_returned_ = true;
  });
  // httplib's stop() does nothing until the accept loop runs, and offers no event to await:
  // wait for the loop here so that a Shutdown() right after Start() is never lost.
  while (!server_->is_running() && !listen_returned_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return absl::OkStatus();
}

void ConsoleServer::Shutdown() {
  if (!started_) return;
  started_ = false;
  server_->stop();  // Closes the listener; workers finish their requests and are joined.
  if (thread_.joinable()) thread_.join();
}

void ConsoleServer::Rpc(const httplib::Request& req, httplib::Response& res) {
  const absl::Time start = clock_.Now();
  ConnectResponse answer;
  // Admit first, so an overloaded console answers at once instead of queueing callers.
  if (in_flight_.fetch_add(1) >= options_.max_concurrent_requests) {
    in_flight_.fetch_sub(1);
    answer.status = absl::UnavailableError(
        absl::StrCat("console overloaded: ", options_.max_concurrent_requests,
                     " requests in flight; retry later"));
    answer.http_status = ConnectHttpStatus(answer.status.code());
    answer.content_type = "application/json";
    answer.body = ConnectErrorJson(answer.status);
    answer.service = "unknown";
    answer.method = "unknown";
  } else {
    metrics_.in_flight().Increment();
    ConnectRequest request;
    request.path = req.path;
    request.content_type = req.get_header_value("Content-Type");
    request.body = req.body;
    request.authorization = req.get_header_value("Authorization");
    request.timeout_ms = req.get_header_value("Connect-Timeout-Ms");
    request.protocol_version = req.get_header_value("Connect-Protocol-Version");
    request.content_encoding = req.get_header_value("Content-Encoding");
    answer = gateway_.Handle(request);
    metrics_.in_flight().Decrement();
    in_flight_.fetch_sub(1);
  }
  res.status = answer.http_status;
  res.set_header("Cache-Control", "no-store");
  if (answer.http_status == 415)
    res.set_header("Accept-Post", "application/json, application/proto");
  res.set_content(std::move(answer.body), answer.content_type);

  const absl::Duration latency = clock_.Now() - start;
  const std::string code(ConnectCodeName(answer.status.code()));
  metrics_.Request(answer.service, answer.method, code, latency);
  // Never the Authorization header, nor the body (a token's secret may travel in either).
  if (answer.status.ok()) {
    spdlog::info("POST {} {} ok {:.1f}ms from {}", req.path, res.status,
                 absl::ToDoubleMilliseconds(latency), req.remote_addr);
  } else {
    spdlog::info("POST {} {} {} {:.1f}ms from {}: {}", req.path, res.status, code,
                 absl::ToDoubleMilliseconds(latency), req.remote_addr,
                 std::string(answer.status.message()));
  }
}

void ConsoleServer::Get(const httplib::Request& req, httplib::Response& res) {
  if (req.path == "/healthz" || req.path == "/readyz") {
    Health(req, res);
    return;
  }
  if (RouteTable::IsApiPath(req.path)) {
    // Connect's GET form is for methods marked side-effect free; ours are all POST.
    res.set_header("Allow", "POST");
    ConnectError(res, absl::UnimplementedError(absl::StrCat(req.path, ": use POST")), 405);
    return;
  }
  absl::StatusOr<StaticFile> file = pages_.Read(req.path);
  if (!file.ok()) {
    res.status = file.status().code() == absl::StatusCode::kInvalidArgument ? 400 : 404;
    res.set_content(
        absl::StrCat(file.status().code() == absl::StatusCode::kInvalidArgument ? "bad path\n"
                                                                                : "not found\n"),
        "text/plain; charset=utf-8");
    return;
  }
  // Revalidated on every load, so a new console version shows at once.
  res.set_header("Cache-Control", "no-cache");
  res.set_content(std::move(file->body), file->content_type);
}

void ConsoleServer::Health(const httplib::Request& req, httplib::Response& res) {
  res.set_header("Cache-Control", "no-store");
  if (req.path == "/healthz") {
    res.set_content("ok\n", "text/plain; charset=utf-8");
    return;
  }
  absl::Status ready = ready_ ? ready_() : absl::OkStatus();
  if (ready.ok()) {
    res.set_content("ready\n", "text/plain; charset=utf-8");
  } else {
    res.status = 503;
    res.set_content(absl::StrCat("not ready: ", ready.message(), "\n"),
                    "text/plain; charset=utf-8");
  }
}

void ConsoleServer::FillError(const httplib::Request& req, httplib::Response& res) {
  if (!RouteTable::IsApiPath(req.path) || req.method != "POST") {
    res.set_content(absl::StrCat("HTTP ", res.status, "\n"), "text/plain; charset=utf-8");
    return;
  }
  // httplib refused the request before Rpc() saw it; answer as Connect would.
  absl::Status status;
  if (res.status == 413) {
    status = absl::ResourceExhaustedError(
        absl::StrCat("request body is over the limit of ", options_.max_body_bytes, " bytes"));
  } else if (res.status == 415) {
    status = absl::UnimplementedError("content encoding is not supported; use identity or gzip");
  } else {
    status = absl::InvalidArgumentError(absl::StrCat("bad request (HTTP ", res.status, ")"));
  }
  const int http_status = res.status;
  ConnectError(res, status, http_status);
  metrics_.Request("unknown", "unknown", ConnectCodeName(status.code()), absl::ZeroDuration());
  spdlog::info("POST {} {} {} from {}: {}", req.path, http_status,
               std::string(ConnectCodeName(status.code())), req.remote_addr,
               std::string(status.message()));
}

}  // namespace jobwheel::console
