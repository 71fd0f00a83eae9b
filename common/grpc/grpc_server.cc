#include "common/grpc/grpc_server.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "common/base/read_file.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"

namespace jobwheel {

absl::StatusOr<std::unique_ptr<grpc::Server>> StartGrpcServer(
    const std::string& address, const std::vector<grpc::Service*>& services, const ServerTls& tls,
    int* bound_port, const ServerLimits& limits) {
  // Keeps the health descriptors linked in so reflection can describe grpc.health.v1.Health.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!tls.cert_file.empty()) {
    auto cert = ReadFileToString(tls.cert_file, "tls_cert");
    if (!cert.ok()) return cert.status();
    auto key = ReadFileToString(tls.key_file, "tls_key");
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions opts(
        tls.client_ca_file.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                   : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    if (!tls.client_ca_file.empty()) {
      auto ca = ReadFileToString(tls.client_ca_file, "tls_client_ca");
      if (!ca.ok()) return ca.status();
      opts.pem_root_certs = *ca;
    }
    opts.pem_key_cert_pairs.push_back({*key, *cert});
    creds = grpc::SslServerCredentials(opts);
  }

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, creds, &port);
  grpc::ResourceQuota quota("jobwheel-server");
  quota.Resize(static_cast<size_t>(limits.memory_bytes));
  quota.SetMaxThreads(limits.max_threads);
  builder.SetResourceQuota(quota);
  builder.SetMaxReceiveMessageSize(limits.max_receive_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams);
  // Finds half-open client connections (e.g. a stopped executor) quickly.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  // Clients may ping while idle (executors between runs), but not more often than this.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             limits.min_recv_ping_interval_ms);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, limits.max_ping_strikes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, limits.max_connection_idle_ms);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, limits.max_connection_age_ms);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, INT_MAX);
  for (grpc::Service* s : services) builder.RegisterService(s);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  if (bound_port != nullptr) *bound_port = port;
  return server;
}

}  // namespace jobwheel
