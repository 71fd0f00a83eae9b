#include "common/grpc/channel.h"

#include "common/base/read_file.h"

namespace jobwheel {

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientTls& tls) {
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!tls.ca_file.empty()) {
    grpc::SslCredentialsOptions opts;
    auto ca = ReadFileToString(tls.ca_file, "tls_ca");
    if (!ca.ok()) return ca.status();
    opts.pem_root_certs = *ca;
    if (!tls.cert_file.empty()) {
      auto cert = ReadFileToString(tls.cert_file, "tls_cert");
      if (!cert.ok()) return cert.status();
      auto key = ReadFileToString(tls.key_file, "tls_key");
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
