#ifndef JOBWHEEL_COMMON_GRPC_GRPC_SERVER_H_
#define JOBWHEEL_COMMON_GRPC_GRPC_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/grpc/channel.h"  // IWYU pragma: export (ClientTls used with ServerTls)
#include "grpcpp/grpcpp.h"

namespace jobwheel {

// Transport security for a server: plaintext when cert_file is empty.
struct ServerTls {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // When set, clients must present a certificate signed by it.
};

// What one server lets its callers use, so that a flood of connections, streams, pings or
// large messages costs bounded memory and threads and cannot starve legitimate callers.
// Every server of the suite gets these defaults through StartGrpcServer.
struct ServerLimits {
  // grpc::ResourceQuota: memory for transport buffers and calls; past it, new calls and
  // reads wait or fail RESOURCE_EXHAUSTED instead of the process growing.
  int64_t memory_bytes = 256ll << 20;
  // Threads of the synchronous parts (health, reflection, sync services) under the quota.
  int max_threads = 64;
  // HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: calls one connection may have open at once
  // (more wait on the client). Executors hold one Heartbeat stream, dispatchers a few.
  int max_concurrent_streams = 256;
  // Requests larger than this are refused with RESOURCE_EXHAUSTED before they are parsed
  // (gRPC's own default; the largest legitimate message, a Run with a 64 KiB script and
  // a 64 KiB param, is far below it).
  int max_receive_message_bytes = 4 << 20;
  // Keepalive enforcement: a client pinging more often than this (our clients ping every
  // 10 s) earns a strike; after max_ping_strikes the connection is closed (GOAWAY
  // too_many_pings).
  int min_recv_ping_interval_ms = 5000;
  int max_ping_strikes = 2;
  // A connection without calls for this long is closed (clients reconnect on demand).
  int max_connection_idle_ms = 10 * 60 * 1000;
  // A connection older than this is asked to go away (GOAWAY) so clients rebalance; calls
  // in flight, e.g. an executor's Heartbeat stream, may finish first: no grace deadline.
  int max_connection_age_ms = 2 * 60 * 60 * 1000;
};

// Builds and starts a server on `address` with the given services, the standard health
// service and server reflection, under `limits`. `bound_port` (optional) receives the port
// actually bound, for address ":0" in tests.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartGrpcServer(
    const std::string& address, const std::vector<grpc::Service*>& services,
    const ServerTls& tls = {}, int* bound_port = nullptr, const ServerLimits& limits = {});

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_GRPC_GRPC_SERVER_H_
