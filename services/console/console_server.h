#ifndef JOBWHEEL_SERVICES_CONSOLE_CONSOLE_SERVER_H_
#define JOBWHEEL_SERVICES_CONSOLE_CONSOLE_SERVER_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/base/log_rate_limiter.h"
#include "common/server/http_listener.h"
#include "common/time/clock.h"
#include "services/console/connect_gateway.h"
#include "services/console/console_metrics.h"
#include "services/console/static_files.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace jobwheel {
class GuardedHttpServer;
}  // namespace jobwheel

namespace jobwheel::console {

// The console's HTTP surface on cpp-httplib: POST /jobwheel.v1.<Service>/<Method> goes to the
// Connect gateway, GET /healthz and /readyz answer health, every other GET is a page from the
// web root. Every response carries the security headers (CSP without inline script, frame
// denial, nosniff, no referrer). Connect requests beyond `max_concurrent_requests` are
// refused at once as unavailable. One client cannot take the console down: connections are
// capped in all and per client IP at accept time; each request must arrive whole, headers and
// body, within `read_timeout`; a body is refused before it is read when it is compressed (any
// Content-Encoding but identity: 415), longer than `max_body_bytes` (413) or of no declared
// length (411), and a chunked body stops being read at the limit (413). Refusals are logged at
// most once per client per 10 s, with a count, and client-chosen text in the log is escaped.
// Owns the listening thread and its worker threads.
class ConsoleServer {
 public:
  struct Options {
    std::string listen = "127.0.0.1:7180";  // host:port; [v6]:port; port 0 picks one.
    int max_concurrent_requests = 32;
    size_t max_body_bytes = 1 << 20;
    // From a request's first byte to the last byte of its body.
    absl::Duration read_timeout = absl::Seconds(5);
    absl::Duration write_timeout = absl::Seconds(10);  // Of a whole response.
    absl::Duration keep_alive_timeout = absl::Seconds(2);
    int max_connections = 128;
    int max_connections_per_client = 16;
  };
  // OK when the backends serve (GET /readyz).
  using ReadyCheck = std::function<absl::Status()>;

  // The security headers every response carries, as (name, value).
  static const std::vector<std::pair<std::string, std::string>>& SecurityHeaders();

  ConsoleServer(Options options, const ConnectGateway& gateway, const StaticFiles& pages,
                ReadyCheck ready, ConsoleMetrics& metrics, const Clock& clock);
  ~ConsoleServer();
  ConsoleServer(const ConsoleServer&) = delete;
  ConsoleServer& operator=(const ConsoleServer&) = delete;

  // Binds and starts serving on a thread of its own.
  absl::Status Start();
  // The bound port (after Start).
  int port() const { return port_; }
  // Stops accepting, lets requests in progress finish, joins. Idempotent.
  void Shutdown();

 private:
  void Rpc(const httplib::Request& req, httplib::Response& res);
  void Get(const httplib::Request& req, httplib::Response& res);
  void Health(const httplib::Request& req, httplib::Response& res);
  // After the headers, before any body is read: refuses what must not be read (true).
  bool RefuseBeforeBody(const httplib::Request& req, httplib::Response& res);
  // Writes `line` unless `client` had a refusal logged within the interval.
  void LogRefusal(const std::string& client, const std::string& line);
  // Fills an error response nobody wrote a body for (httplib's own 400/413/...).
  void FillError(const httplib::Request& req, httplib::Response& res);

  const Options options_;
  const ConnectGateway& gateway_;
  const StaticFiles& pages_;
  const ReadyCheck ready_;
  ConsoleMetrics& metrics_;
  const Clock& clock_;
  LogRateLimiter refusal_log_;
  std::unique_ptr<GuardedHttpServer> server_;
  HttpListener listener_;  // Declared after server_: stopped before it goes.
  std::atomic<int> in_flight_{0};
  int port_ = 0;
};

}  // namespace jobwheel::console

#endif  // JOBWHEEL_SERVICES_CONSOLE_CONSOLE_SERVER_H_
