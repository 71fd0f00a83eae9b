// With mutual TLS, an executor may register the names and IPs its verified client certificate
// carries as subjectAltNames — and nothing else that is not its peer address (real binaries).

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/registry.grpc.pb.h"

namespace jobwheel::security_testing {

using testing::Ctx;
using testing::Stack;
using testing::WriteFile;
namespace {

int NextInstance() {
  static std::atomic<int> next{0};
  return next.fetch_add(1);
}

bool Sh(const std::string& command) { return std::system(command.c_str()) == 0; }

// A CA and a certificate (server and client) for 127.0.0.1 and localhost that also names
// exec-1.example.test and 192.0.2.10: `dir`/ca.crt, `dir`/node.{crt,key}.
bool MakeCertificates(const std::string& dir) {
  const std::string ca = dir + "/ca";
  const std::string node = dir + "/node";
  WriteFile(node + ".ext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:exec-1.example.test,IP:192.0.2.10,"
            "DNS:*.wild.example.test\n"
            "extendedKeyUsage=serverAuth,clientAuth\n"
            "basicConstraints=CA:FALSE\n"
            "keyUsage=digitalSignature,keyEncipherment\n");
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  return Sh(absl::StrCat("openssl req -x509 ", ec, " -keyout ", ca, ".key -out ", ca,
                         ".crt -days 2 -subj '/CN=jobwheel registration CA' 2>/dev/null")) &&
         Sh(absl::StrCat("openssl req -new ", ec, " -keyout ", node, ".key -out ", node,
                         ".csr -subj '/CN=localhost' 2>/dev/null")) &&
         Sh(absl::StrCat("openssl x509 -req -in ", node, ".csr -CA ", ca, ".crt -CAkey ", ca,
                         ".key -CAcreateserial -out ", node, ".crt -days 2 -extfile ", node,
                         ".ext 2>/dev/null"));
}

TEST(RegistrationTlsTest, CertificateNamesAreTheCallersOwnAddresses) {
  const std::string dir = testing::TestTempDir("registration_tls");
  ASSERT_TRUE(MakeCertificates(dir)) << "openssl failed";
  Stack::Options options;
  options.tls_ca = dir + "/ca.crt";
  options.tls_cert = dir + "/node.crt";
  options.tls_key = dir + "/node.key";
  options.mutual_tls = true;
  Stack stack(options);
  absl::Status started = stack.StartServices();
  ASSERT_TRUE(started.ok()) << started << "\n" << stack.Logs();
  auto token = stack.CreateToken("exec-demo", v1::ROLE_EXECUTOR, {"demo"});
  ASSERT_TRUE(token.ok()) << token.status();
  auto registry = v1::RegistryService::NewStub(stack.Channel(stack.registry()));
  auto register_once = [&](const std::string& address) {
    auto ctx = Ctx(*token);
    auto stream = registry->Heartbeat(ctx.get());
    v1::HeartbeatRequest req;
    req.mutable_register_()->set_app("demo");
    req.mutable_register_()->set_address(address);
    // A process of its own: a fresh instance id (a reconnect would keep its id).
    req.mutable_register_()->set_instance_id(
        absl::StrCat("security-test-", getpid(), "-", NextInstance()));
    stream->Write(req);
    v1::HeartbeatResponse resp;
    if (stream->Read(&resp) && resp.has_registered()) {
      ctx->TryCancel();
      (void)stream->Finish();
      return grpc::Status::OK;
    }
    return stream->Finish();
  };
  // Named by the client certificate (the peer is 127.0.0.1).
  for (const char* own : {"exec-1.example.test:7200", "192.0.2.10:7200"}) {
    grpc::Status s = register_once(own);
    EXPECT_TRUE(s.ok()) << own << ": " << s.error_message() << "\n" << stack.Logs();
  }
  // Named too, but not in canonical spelling: one spelling per address.
  grpc::Status other_spelling = register_once("EXEC-1.example.test.:7201");
  EXPECT_EQ(other_spelling.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(
      absl::StrContains(other_spelling.error_message(), "advertise \"exec-1.example.test:7201\""))
      << other_spelling.error_message();
  // Not named (a wildcard SAN does not count).
  for (const char* other :
       {"exec-2.example.test:7200", "a.wild.example.test:7200", "192.0.2.11:7200"}) {
    grpc::Status s = register_once(other);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << other;
    EXPECT_TRUE(absl::StartsWith(s.error_message(), "register.address: ")) << s.error_message();
  }
}

}  // namespace
}  // namespace jobwheel::security_testing
