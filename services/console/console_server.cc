#include "services/console/console_server.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/log_text.h"
#include "common/server/guarded_http_server.h"
#include "httplib.h"
#include "services/console/connect_error.h"
#include "services/console/route_table.h"
#include "spdlog/spdlog.h"

namespace jobwheel::console {
namespace {

void ConnectError(httplib::Response& res, const absl::Status& status, int http_status) {
  res.status = http_status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(ConnectErrorJson(status), "application/json");
}

// Whether a request's body, if any, may be read: it is not compressed and has a length, no
// longer than the limit (or is chunked: then bounded while it streams).
struct BodyCheck {
  int http_status = 0;  // 0: read it.
  absl::Status status;
  size_t budget = 0;  // Raw bytes it may take.
};

BodyCheck CheckBody(const httplib::Request& req, size_t max_body_bytes) {
  BodyCheck c;
  const std::string encoding =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(req.get_header_value("Content-Encoding")));
  if (!encoding.empty() && encoding != "identity") {
    c.http_status = 415;
    c.status = absl::UnimplementedError(
        "content-encoding is not supported; send the body uncompressed (identity)");
    return c;
  }
  const std::string te =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(req.get_header_value("Transfer-Encoding")));
  if (!te.empty()) {
    if (te != "chunked") {
      c.http_status = 501;
      c.status = absl::UnimplementedError("transfer-encoding: only chunked is supported");
      return c;
    }
    // Chunk framing on top of the body: a little room, still bounded.
    c.budget = max_body_bytes + max_body_bytes / 2 + 4096;
    return c;
  }
  if (req.has_header("Content-Length")) {
    uint64_t length = 0;
    if (!absl::SimpleAtoi(req.get_header_value("Content-Length"), &length)) {
      c.http_status = 400;
      c.status = absl::InvalidArgumentError("content-length: not a number");
    } else if (length > max_body_bytes) {
      c.http_status = 413;
      c.status = absl::ResourceExhaustedError(absl::StrCat(
          "request body of ", length, " bytes is over the limit of ", max_body_bytes, " bytes"));
    } else {
      c.budget = static_cast<size_t>(length);
    }
    return c;
  }
  if (req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
    c.http_status = 411;
    c.status = absl::InvalidArgumentError("content-length: required");
  }
  return c;
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
      refusal_log_(LogRateLimiter::Options(), clock) {
  GuardedHttpServer::Config o;
  o.max_connections = options_.max_connections;
  o.max_connections_per_client = options_.max_connections_per_client;
  o.limits.request_deadline = options_.read_timeout;
  o.limits.write_timeout = options_.write_timeout;
  o.keep_alive_timeout = options_.keep_alive_timeout;
  // Socket deadlines are waited for by poll(), in real time.
  server_ = std::make_unique<GuardedHttpServer>(
      o,
      [this](const std::string& client, const absl::Status& why) {
        metrics_.ConnectionRefused();
        LogRefusal(client, absl::StrCat("connection from ", client, " refused: ", why.message()));
      },
      RealClock::Get());
}

ConsoleServer::~ConsoleServer() { Shutdown(); }

absl::Status ConsoleServer::Start() {
  httplib::Headers headers;
  for (const auto& [name, value] : SecurityHeaders()) headers.emplace(name, value);
  server_->set_default_headers(std::move(headers));
  server_->set_payload_max_length(options_.max_body_bytes);
  // Timeouts, keep-alive and the worker threads are GuardedHttpServer's (Options above).
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return RefuseBeforeBody(req, res) ? httplib::Server::HandlerResponse::Handled
                                      : httplib::Server::HandlerResponse::Unhandled;
  });

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
        spdlog::error("{} {}: handler threw", LogText(req.method), LogText(req.path));
        ConnectError(res, absl::InternalError("internal error"), 500);
      });
  server_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    if (RouteTable::IsApiPath(req.path) && req.method == "POST") return;  // Rpc() counted it.
    metrics_.Page(res.status);
    spdlog::debug("{} {} {} from {}", LogText(req.method), LogText(req.path), res.status,
                  req.remote_addr);
  });

  absl::StatusOr<int> bound = listener_.Start(*server_, options_.listen, "--listen");
  if (!bound.ok()) return bound.status();
  port_ = *bound;
  return absl::OkStatus();
}

void ConsoleServer::Shutdown() { listener_.Stop(); }

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
    request.client = req.remote_addr;
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
    spdlog::info("POST {} {} ok {:.1f}ms from {}", LogText(req.path), res.status,
                 absl::ToDoubleMilliseconds(latency), req.remote_addr);
  } else {
    LogRefusal(req.remote_addr,
               absl::StrCat("POST ", LogText(req.path), " ", res.status, " ", code, " ",
                            absl::ToInt64Milliseconds(latency), "ms from ", req.remote_addr, ": ",
                            LogText(answer.status.message())));
  }
}

void ConsoleServer::LogRefusal(const std::string& client, const std::string& line) {
  const LogRateLimiter::Verdict v = refusal_log_.Admit(client);
  if (v.log) spdlog::info("{}{}", line, LogRateLimiter::SuppressedNote(v.suppressed));
}

bool ConsoleServer::RefuseBeforeBody(const httplib::Request& req, httplib::Response& res) {
  GuardedHttpServer::Connection* conn = GuardedHttpServer::Current();
  const BodyCheck check = CheckBody(req, options_.max_body_bytes);
  if (check.http_status == 0) {
    if (conn != nullptr) conn->LimitBody(check.budget);
    return false;
  }
  // The body stays unread: the connection cannot carry another request.
  if (conn != nullptr) conn->CloseAfterResponse();
  res.set_header("Connection", "close");
  if (check.http_status == 415) res.set_header("Accept-Encoding", "identity");
  ConnectError(res, check.status, check.http_status);
  metrics_.Request("unknown", "unknown", ConnectCodeName(check.status.code()),
                   absl::ZeroDuration());
  LogRefusal(req.remote_addr,
             absl::StrCat(LogText(req.method), " ", LogText(req.path), " ", check.http_status,
                          " from ", req.remote_addr, ": ", check.status.message()));
  return true;
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
  GuardedHttpServer::Connection* conn = GuardedHttpServer::Current();
  const bool timed_out = conn != nullptr && conn->past_deadline();
  const bool too_big = conn != nullptr && conn->over_budget();
  // A request refused before its headers were parsed has no remote_addr yet.
  const std::string client = conn != nullptr ? conn->client() : req.remote_addr;
  absl::Status status;
  if (timed_out || too_big) {
    // The rest of the request is unread: the connection cannot carry another one.
    conn->CloseAfterResponse();
    res.set_header("Connection", "close");
  }
  if (timed_out) {
    res.status = 408;
    status = absl::DeadlineExceededError(absl::StrCat("request not received in full within ",
                                                      absl::FormatDuration(options_.read_timeout)));
  } else if (too_big && conn->reading_body()) {
    res.status = 413;
    status = absl::ResourceExhaustedError(
        absl::StrCat("request body is over the limit of ", options_.max_body_bytes, " bytes"));
  } else if (too_big) {
    res.status = 431;
    status = absl::ResourceExhaustedError("request headers are over the limit");
  } else if (res.status == 413) {
    status = absl::ResourceExhaustedError(
        absl::StrCat("request body is over the limit of ", options_.max_body_bytes, " bytes"));
  } else if (res.status == 415) {
    status = absl::UnimplementedError("content-encoding is not supported; use identity");
  } else {
    status = absl::InvalidArgumentError(absl::StrCat("bad request (HTTP ", res.status, ")"));
  }
  const int http_status = res.status;
  LogRefusal(client, absl::StrCat(req.method.empty() ? "-" : LogText(req.method), " ",
                                  req.path.empty() ? "-" : LogText(req.path), " ", http_status, " ",
                                  ConnectCodeName(status.code()), " from ", client, ": ",
                                  status.message()));
  if (!RouteTable::IsApiPath(req.path) || req.method != "POST") {
    res.set_content(absl::StrCat("HTTP ", http_status, "\n"), "text/plain; charset=utf-8");
    return;
  }
  // httplib refused the request before Rpc() saw it; answer as Connect would.
  ConnectError(res, status, http_status);
  metrics_.Request("unknown", "unknown", ConnectCodeName(status.code()), absl::ZeroDuration());
}

}  // namespace jobwheel::console
