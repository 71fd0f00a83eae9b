#include "common/grpc/grpc_server.h"

#include <climits>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"

namespace jobwheel {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, absl::string_view what) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, ": cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<grpc::Server>> StartGrpcServer(
    const std::string& address, const std::vector<grpc::Service*>& services, const ServerTls& tls,
    int* bound_port, const ServerLimits& limits) {
  // Keeps the health descriptors linked in so reflection can describe grpc.health.v1.Health.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!tls.cert_file.empty()) {
    auto cert = ReadFile(tls.cert_file, "tls_cert");
    if (!cert.ok()) return cert.status();
    auto key = ReadFile(tls.key_file, "tls_key");
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions opts(
        tls.client_ca_file.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                   : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    if (!tls.client_ca_file.empty()) {
      auto ca = ReadFile(tls.client_ca_file, "tls_client_ca");
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

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientTls& tls) {
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!tls.ca_file.empty()) {
    grpc::SslCredentialsOptions opts;
    auto ca = ReadFile(tls.ca_file, "tls_ca");
    if (!ca.ok()) return ca.status();
    opts.pem_root_certs = *ca;
    if (!tls.cert_file.empty()) {
      auto cert = ReadFile(tls.cert_file, "tls_cert");
      if (!cert.ok()) return cert.status();
      auto key = ReadFile(tls.key_file, "tls_key");
      if (!key.ok()) return key.status();
      opts.pem_cert_chain = *cert;
      opts.pem_private_key = *key;
    }
    creds = grpc::SslCredentials(opts);
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Several comma-separated addresses or a DNS name: balance per call over all of them.
  args.SetLoadBalancingPolicyName("round_robin");
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  return grpc::CreateCustomChannel(target, creds, args);
}

}  // namespace jobwheel
