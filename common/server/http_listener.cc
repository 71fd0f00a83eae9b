#include "common/server/http_listener.h"

#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/net/host_port.h"

namespace jobwheel {

absl::StatusOr<int> HttpListener::Start(httplib::Server& server, const std::string& host, int port,
                                        absl::string_view flag, absl::string_view listen) {
  if (server_ != nullptr) return absl::FailedPreconditionError("HTTP listener already started");
  int bound = 0;
  if (port == 0) {
    bound = server.bind_to_any_port(host);
    if (bound < 0) bound = 0;
  } else if (server.bind_to_port(host, port)) {
    bound = port;
  }
  if (bound == 0) return absl::UnavailableError(absl::StrCat(flag, " ", listen, ": cannot bind"));
  server_ = &server;
  listen_returned_ = false;
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    listen_returned_ = true;
  });
  while (!server_->is_running() && !listen_returned_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return bound;
}

absl::StatusOr<int> HttpListener::Start(httplib::Server& server, absl::string_view listen,
                                        absl::string_view flag) {
  // Port 0 (a free port: tests) is no port to ParseHostPort; the host is checked with 1.
  const bool any_port = absl::EndsWith(listen, ":0");
  const std::string text =
      any_port ? absl::StrCat(listen.substr(0, listen.size() - 1), "1") : std::string(listen);
  absl::StatusOr<net::HostPort> hp = net::ParseHostPort(text);
  if (!hp.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " \"", listen, "\": want host:port (", hp.status().message(), ")"));
  }
  return Start(server, hp->host, any_port ? 0 : hp->port, flag, listen);
}

void HttpListener::Stop() {
  if (server_ == nullptr) return;
  server_->stop();
  if (thread_.joinable()) thread_.join();
  server_ = nullptr;
}

}  // namespace jobwheel
