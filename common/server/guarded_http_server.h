#ifndef JOBWHEEL_COMMON_SERVER_GUARDED_HTTP_SERVER_H_
#define JOBWHEEL_COMMON_SERVER_GUARDED_HTTP_SERVER_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/server/bounded_socket_stream.h"
#include "common/server/connection_admission.h"
#include "common/time/clock.h"
#include "httplib.h"

namespace jobwheel {

// cpp-httplib's Server with the bounds one hostile client must not get past:
// - connections are admitted at accept time, at most `max_connections` in all and
//   `max_connections_per_client` per client IP; over a cap the connection is answered 503 and
//   closed at once, on the accepting thread, never queued;
// - each admitted connection has one of `max_connections` worker threads, so an admitted
//   connection never waits for another to finish;
// - each request must arrive whole (headers and body) within `limits.request_deadline` of its
//   first byte and within its byte budgets (BoundedSocketStream), each response be written
//   within `limits.write_timeout`, and an idle keep-alive connection closes after
//   `keep_alive_timeout` or `keep_alive_max_count` requests.
// Handlers reach their own connection through Current() (same thread). Register routes and
// handlers as on httplib::Server; do not replace new_task_queue.
class GuardedHttpServer : public httplib::Server {
 public:
  // (Not "Options": that is httplib::Server's OPTIONS route method.)
  struct Config {
    int max_connections = 128;
    int max_connections_per_client = 16;
    BoundedSocketStream::Limits limits;
    absl::Duration keep_alive_timeout = absl::Seconds(2);
    size_t keep_alive_max_count = 100;
  };
  // A connection refused at accept time: the client's IP and why (RESOURCE_EXHAUSTED).
  using RefusedCallback = std::function<void(const std::string& client, const absl::Status&)>;

  // The connection a handler is serving, as its handlers see it.
  class Connection {
   public:
    Connection(int fd, std::string client, BoundedSocketStream::Limits limits, const Clock& clock)
        : client_(std::move(client)), stream_(fd, limits, clock) {}
    // The client's IP address ("127.0.0.1", "::1").
    const std::string& client() const { return client_; }
    // The current request's body may be `bytes` long (raw, framing included).
    void LimitBody(size_t bytes) { stream_.LimitBody(bytes); }
    // Whether reading the request failed on its byte budget (of the headers, or of the body
    // once LimitBody was called) or its deadline.
    bool reading_body() const { return stream_.reading_body(); }
    bool over_budget() const { return stream_.over_budget(); }
    bool past_deadline() const { return stream_.past_deadline(); }
    // Close once this response is written (set "Connection: close" on it too).
    void CloseAfterResponse() { close_ = true; }

   private:
    friend class GuardedHttpServer;
    const std::string client_;
    BoundedSocketStream stream_;
    bool close_ = false;
  };

  // The connection of the calling handler thread; nullptr outside a handler.
  static Connection* Current();

  // `clock`: the time of the socket deadlines (poll waits in real time: RealClock).
  GuardedHttpServer(Config config, RefusedCallback on_refused, const Clock& clock);

  const ConnectionAdmission& admission() const { return admission_; }

 private:
  class AdmissionQueue;

  bool process_and_close_socket(socket_t sock) override;
  bool stopping() const { return svr_sock_ == INVALID_SOCKET; }

  const Config options_;
  const RefusedCallback on_refused_;
  const Clock& clock_;
  ConnectionAdmission admission_;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_SERVER_GUARDED_HTTP_SERVER_H_
