#include "services/xxl_gateway/admin_http_server.h"

#include <chrono>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/log_text.h"
#include "common/time/clock.h"
#include "httplib.h"
#include "services/xxl_gateway/xxl_protocol.h"
#include "spdlog/spdlog.h"

namespace jobwheel::xxl {
namespace {

void Reply(httplib::Response& res, const absl::Status& status) {
  res.status = 200;  // XXL reads the code in the body.
  res.set_content(AdminReply(status.ok(), status.message()), "application/json;charset=UTF-8");
}

const char* EndpointName(AdminEndpoint e) {
  switch (e) {
    case AdminEndpoint::kRegistry:
      return "registry";
    case AdminEndpoint::kRegistryRemove:
      return "registryRemove";
    case AdminEndpoint::kCallback:
      return "callback";
    default:
      return "none";
  }
}

std::string Outcome(const absl::Status& s) {
  if (s.ok()) return "ok";
  if (absl::IsInvalidArgument(s)) return "bad_request";
  if (absl::IsUnavailable(s)) return "unavailable";
  if (absl::IsResourceExhausted(s)) return "limited";
  return "refused";
}

}  // namespace

AdminHttpServer::AdminHttpServer(Options options, Gateway& gateway, GatewayMetrics& metrics,
                                 std::function<absl::Status()> ready)
    : options_(std::move(options)), gateway_(gateway), metrics_(metrics), ready_(std::move(ready)) {
  GuardedHttpServer::Config c;
  c.max_connections = options_.threads;
  c.max_connections_per_client = options_.max_connections_per_client;
  c.limits.request_deadline = options_.read_timeout;
  c.limits.write_timeout = options_.write_timeout;
  c.keep_alive_timeout = options_.keep_alive_timeout;
  // Socket deadlines are waited for by poll(), in real time.
  server_ = std::make_unique<GuardedHttpServer>(
      c,
      [this](const std::string& client, const absl::Status& why) {
        metrics_.AdminRequest("none", "limited");
        spdlog::debug("connection from {} refused: {}", client, std::string(why.message()));
      },
      RealClock::Get());
}

AdminHttpServer::~AdminHttpServer() { Shutdown(); }

absl::Status AdminHttpServer::Start() {
  server_->set_payload_max_length(options_.max_body_bytes);
  // Timeouts, keep-alive and the workers are GuardedHttpServer's (the constructor).
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return RefuseBeforeBody(req, res) ? httplib::Server::HandlerResponse::Handled
                                      : httplib::Server::HandlerResponse::Unhandled;
  });
  server_->Post(".*",
                [this](const httplib::Request& req, httplib::Response& res) { Post(req, res); });
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    absl::Status s = ready_();
    res.status = s.ok() ? 200 : 503;
    res.set_content(s.ok() ? "ready\n" : absl::StrCat(s.message(), "\n"), "text/plain");
  });
  auto not_post = [](const httplib::Request&, httplib::Response& res) {
    Reply(res, absl::InvalidArgumentError("invalid request, HttpMethod not support."));
  };
  server_->Put(".*", not_post);
  server_->Delete(".*", not_post);
  server_->Patch(".*", not_post);
  server_->set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
        spdlog::error("POST {}: handler threw", LogText(req.path));
        Reply(res, absl::InternalError("internal error"));
      });
  absl::StatusOr<int> bound = listener_.Start(*server_, options_.listen, "--listen_http");
  if (!bound.ok()) return bound.status();
  port_ = *bound;
  return absl::OkStatus();
}

void AdminHttpServer::Shutdown() { listener_.Stop(); }

bool AdminHttpServer::RefuseBeforeBody(const httplib::Request& req, httplib::Response& res) {
  GuardedHttpServer::Connection* conn = GuardedHttpServer::Current();
  absl::Status refused = absl::OkStatus();
  size_t budget = 0;
  if (!req.get_header_value("Transfer-Encoding").empty()) {
    // Chunk framing on top of the body: a little room, still bounded.
    budget = options_.max_body_bytes + options_.max_body_bytes / 2 + 4096;
  } else if (req.has_header("Content-Length")) {
    uint64_t length = 0;
    if (!absl::SimpleAtoi(req.get_header_value("Content-Length"), &length)) {
      refused = absl::InvalidArgumentError("Content-Length: not a number");
    } else if (length > options_.max_body_bytes) {
      refused = absl::ResourceExhaustedError(absl::StrCat(
          "request body of ", length, " bytes is over the limit of ", options_.max_body_bytes));
    } else {
      budget = static_cast<size_t>(length);
    }
  }
  if (refused.ok()) {
    if (conn != nullptr) conn->LimitBody(budget);
    return false;
  }
  // The body stays unread: the connection cannot carry another request.
  if (conn != nullptr) conn->CloseAfterResponse();
  res.set_header("Connection", "close");
  metrics_.AdminRequest(EndpointName(AdminEndpointOf(req.path)), Outcome(refused));
  Reply(res, refused);
  return true;
}

void AdminHttpServer::Post(const httplib::Request& req, httplib::Response& res) {
  const AdminEndpoint endpoint = AdminEndpointOf(req.path);
  const std::string token = req.get_header_value("XXL-JOB-ACCESS-TOKEN");
  const std::string& peer = req.remote_addr;
  absl::Status status;
  switch (endpoint) {
    case AdminEndpoint::kRegistry:
    case AdminEndpoint::kRegistryRemove: {
      auto param = ParseRegistryParam(req.body);
      if (!param.ok()) {
        status = param.status();
      } else if (endpoint == AdminEndpoint::kRegistry) {
        status = gateway_.Register(*param, token, peer);
      } else {
        status = gateway_.Remove(*param, token, peer);
      }
      break;
    }
    case AdminEndpoint::kCallback: {
      auto items = ParseCallbacks(req.body);
      status = items.ok() ? gateway_.Callback(*items, token, peer) : items.status();
      break;
    }
    default:
      status =
          absl::NotFoundError(absl::StrCat("no such admin endpoint: ", req.path.substr(0, 200)));
  }
  metrics_.AdminRequest(EndpointName(endpoint), Outcome(status));
  if (!status.ok()) {
    spdlog::info("POST {} from {}: {}", req.path.substr(0, 200), peer, status.ToString());
  }
  Reply(res, status);
}

}  // namespace jobwheel::xxl
