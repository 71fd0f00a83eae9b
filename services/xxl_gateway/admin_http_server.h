#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_ADMIN_HTTP_SERVER_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_ADMIN_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/server/guarded_http_server.h"
#include "common/server/http_listener.h"
#include "services/xxl_gateway/gateway.h"
#include "services/xxl_gateway/gateway_metrics.h"

namespace jobwheel::xxl {

// The HTTP side that plays xxl-job-admin for XXL executors (cpp-httplib): POST to any path
// ending in /api/registry, /api/registryRemove or /api/callback (with or without a context
// path); answers {"code":200,...} or code 500 with a reason, always HTTP 200 as XXL expects.
// GET /healthz and /readyz answer health. One client cannot take this side down
// (GuardedHttpServer): at most `threads` connections in all and `max_connections_per_client`
// per client IP, the one over a cap answered 503 and closed at accept; each request must
// arrive whole within `read_timeout` of its first byte, and a body over `max_body_bytes` is
// refused from its Content-Length before it is read. Owns its listening thread and workers.
class AdminHttpServer {
 public:
  struct Options {
    std::string listen = "127.0.0.1:7190";
    size_t max_body_bytes = 1 << 20;
    int threads = 64;  // Connections served at once, each on its own worker.
    int max_connections_per_client = 16;
    absl::Duration read_timeout = absl::Seconds(5);
    absl::Duration write_timeout = absl::Seconds(5);
    absl::Duration keep_alive_timeout = absl::Seconds(30);
  };
  AdminHttpServer(Options options, Gateway& gateway, GatewayMetrics& metrics,
                  std::function<absl::Status()> ready);
  ~AdminHttpServer();

  absl::Status Start();
  int port() const { return port_; }
  void Shutdown();

 private:
  void Post(const httplib::Request& req, httplib::Response& res);
  // Checks the body's announced size before it is read: true (answered, connection closed)
  // when it is refused; otherwise the connection may read that many bytes of body.
  bool RefuseBeforeBody(const httplib::Request& req, httplib::Response& res);

  const Options options_;
  Gateway& gateway_;
  GatewayMetrics& metrics_;
  const std::function<absl::Status()> ready_;
  std::unique_ptr<GuardedHttpServer> server_;
  HttpListener listener_;  // Declared after server_: stopped before it goes.
  int port_ = 0;
};

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_ADMIN_HTTP_SERVER_H_
