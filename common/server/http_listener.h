#ifndef JOBWHEEL_COMMON_SERVER_HTTP_LISTENER_H_
#define JOBWHEEL_COMMON_SERVER_HTTP_LISTENER_H_

#include <atomic>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "httplib.h"

namespace jobwheel {

// Runs one httplib server's accept loop on a thread of its own: binds host:port (0: a free
// port), starts the loop and returns once it runs — httplib's stop() does nothing before the
// loop runs and offers no event to await, so a Stop() right after Start() is never lost.
// The server is not owned and must outlive Stop().
class HttpListener {
 public:
  HttpListener() = default;
  ~HttpListener() { Stop(); }
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // The bound port; UNAVAILABLE naming `flag` (e.g. "--listen") when it cannot bind.
  absl::StatusOr<int> Start(httplib::Server& server, const std::string& host, int port,
                            absl::string_view flag, absl::string_view listen);
  // The same for `listen`, "host:port" or "[v6]:port" (net::ParseHostPort; port 0: a free
  // one); INVALID_ARGUMENT naming `flag` when it is not one.
  absl::StatusOr<int> Start(httplib::Server& server, absl::string_view listen,
                            absl::string_view flag);
  // Closes the listener; workers finish their requests and are joined. Idempotent.
  void Stop();

 private:
  httplib::Server* server_ = nullptr;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_SERVER_HTTP_LISTENER_H_
