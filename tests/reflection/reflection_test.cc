// Server reflection on every process of a real stack (scheduler, registry, dispatcher and the
// demo executor), as grpcurl uses it: `list` names every service the process serves — its
// jobwheel services, grpc.health.v1.Health and the reflection service itself — and
// `describe` of every listed service resolves: the files the server returns (and their
// imports, fetched by name) build into a descriptor pool where the service and each method's
// request and response types are found. The jobwheel services must describe exactly the
// methods this build compiled in.
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/sync_stream.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/app_admin.grpc.pb.h"
#include "jobwheel/v1/dispatcher.grpc.pb.h"
#include "jobwheel/v1/executor.grpc.pb.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/leadership.grpc.pb.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "jobwheel/v1/token_admin.grpc.pb.h"
#include "reflection_v1alpha.pb.h"
#include "tests/e2e/stack_test.h"

namespace jobwheel {
namespace {

namespace refl = ::jobwheel::testing::reflection;
using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptorProto;
using google::protobuf::ServiceDescriptor;

constexpr char kReflectionService[] = "grpc.reflection.v1alpha.ServerReflection";
constexpr char kHealthService[] = "grpc.health.v1.Health";

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

// A v1alpha reflection client over one channel: each call is one request on its own stream.
class ReflectionClient {
 public:
  explicit ReflectionClient(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)),
        method_("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                grpc::internal::RpcMethod::BIDI_STREAMING) {}

  absl::StatusOr<std::vector<std::string>> ListServices() {
    refl::ServerReflectionRequest req;
    req.set_list_services("*");
    absl::StatusOr<refl::ServerReflectionResponse> answer = Call(req);
    if (!answer.ok()) return answer.status();
    const refl::ServerReflectionResponse& resp = *answer;
    if (!resp.has_list_services_response()) return Unexpected(resp, "list_services");
    std::vector<std::string> names;
    for (const auto& s : resp.list_services_response().service()) names.push_back(s.name());
    return names;
  }

  // The service as grpcurl's `describe` resolves it, in `pool`.
  absl::StatusOr<const ServiceDescriptor*> Describe(const std::string& service,
                                                    DescriptorPool& pool) {
    refl::ServerReflectionRequest req;
    req.set_file_containing_symbol(service);
    absl::StatusOr<refl::ServerReflectionResponse> answer = Call(req);
    if (!answer.ok()) return answer.status();
    const refl::ServerReflectionResponse& resp = *answer;
    if (!resp.has_file_descriptor_response()) return Unexpected(resp, service);
    std::string root;
    for (const std::string& bytes : resp.file_descriptor_response().file_descriptor_proto()) {
      FileDescriptorProto file;
      if (!file.ParseFromString(bytes)) {
        return absl::DataLossError(absl::StrCat(service, ": a file descriptor does not parse"));
      }
      if (root.empty()) root = file.name();
      files_[file.name()] = file;
    }
    if (root.empty()) return absl::NotFoundError(absl::StrCat(service, ": no file returned"));
    absl::Status built = Build(root, pool, 0);
    if (!built.ok()) return built;
    const ServiceDescriptor* desc = pool.FindServiceByName(service);
    if (desc == nullptr) {
      return absl::NotFoundError(absl::StrCat(service, ": not in the files returned (", root, ")"));
    }
    return desc;
  }

 private:
  absl::StatusOr<refl::ServerReflectionResponse> Call(const refl::ServerReflectionRequest& req) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    std::unique_ptr<
        grpc::ClientReaderWriter<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>
        stream(grpc::internal::ClientReaderWriterFactory<
               refl::ServerReflectionRequest,
               refl::ServerReflectionResponse>::Create(channel_.get(), method_, &ctx));
    refl::ServerReflectionResponse resp;
    const bool wrote = stream->Write(req);
    const bool read = wrote && stream->Read(&resp);
    stream->WritesDone();
    grpc::Status s = stream->Finish();
    if (!s.ok()) return FromGrpc(s, "ServerReflectionInfo");
    if (!read) return absl::UnavailableError("ServerReflectionInfo: no response");
    if (resp.has_error_response()) {
      return absl::NotFoundError(absl::StrCat("reflection error ",
                                              resp.error_response().error_code(), ": ",
                                              resp.error_response().error_message()));
    }
    return resp;
  }

  static absl::Status Unexpected(const refl::ServerReflectionResponse& resp,
                                 absl::string_view what) {
    return absl::InternalError(
        absl::StrCat(what, ": unexpected response ", resp.ShortDebugString()));
  }

  // Adds `name` to `pool` after its imports, fetching files the server has not sent yet.
  absl::Status Build(const std::string& name, DescriptorPool& pool, int depth) {
    if (pool.FindFileByName(name) != nullptr) return absl::OkStatus();
    if (depth > 32) return absl::InternalError(absl::StrCat(name, ": import cycle"));
    if (files_.count(name) == 0) {
      refl::ServerReflectionRequest req;
      req.set_file_by_filename(name);
      absl::StatusOr<refl::ServerReflectionResponse> answer = Call(req);
      if (!answer.ok()) return answer.status();
      const refl::ServerReflectionResponse& resp = *answer;
      if (!resp.has_file_descriptor_response()) return Unexpected(resp, name);
      for (const std::string& bytes : resp.file_descriptor_response().file_descriptor_proto()) {
        FileDescriptorProto file;
        if (file.ParseFromString(bytes)) files_[file.name()] = file;
      }
      if (files_.count(name) == 0) {
        return absl::NotFoundError(absl::StrCat("the server does not return file ", name));
      }
    }
    const FileDescriptorProto file = files_[name];
    for (const std::string& dep : file.dependency()) {
      absl::Status s = Build(dep, pool, depth + 1);
      if (!s.ok()) return s;
    }
    if (pool.BuildFile(file) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": does not build"));
    }
    return absl::OkStatus();
  }

  std::shared_ptr<grpc::Channel> channel_;
  const grpc::internal::RpcMethod method_;
  std::map<std::string, FileDescriptorProto> files_;
};

std::vector<std::string> MethodNames(const ServiceDescriptor& service) {
  std::vector<std::string> names;
  for (int i = 0; i < service.method_count(); ++i) names.push_back(service.method(i)->name());
  return names;
}

class ReflectionTest : public e2e::StackTest {
 protected:
  // Lists and describes every service of the process at `target`; expects `expected` (plus
  // health and reflection) among those listed.
  void CheckProcess(const std::string& what, const std::string& target,
                    const std::vector<const ServiceDescriptor*>& expected) {
    SCOPED_TRACE(absl::StrCat(what, " at ", target));
    ReflectionClient client(stack_->Channel(target));
    auto listed = client.ListServices();
    ASSERT_TRUE(listed.ok()) << listed.status();
    const std::set<std::string> names(listed->begin(), listed->end());
    std::cout << what << " lists: " << absl::StrJoin(names, ", ") << std::endl;
    std::set<std::string> want = {kHealthService, kReflectionService};
    for (const ServiceDescriptor* s : expected) {
      if (s != nullptr) want.insert(s->full_name());
    }
    for (const std::string& name : want) {
      EXPECT_TRUE(names.count(name) == 1)
          << name << " not listed; listed: " << absl::StrJoin(names, ", ");
    }
    EXPECT_EQ(names.size(), listed->size()) << "a service listed twice";

    DescriptorPool pool;
    for (const std::string& name : names) {
      SCOPED_TRACE(name);
      auto desc = client.Describe(name, pool);
      ASSERT_TRUE(desc.ok()) << desc.status();
      const ServiceDescriptor& service = **desc;
      EXPECT_GT(service.method_count(), 0);
      for (int i = 0; i < service.method_count(); ++i) {
        EXPECT_NE(service.method(i)->input_type(), nullptr);
        EXPECT_NE(service.method(i)->output_type(), nullptr);
      }
      // Ours describe exactly the methods this build compiled in, with the same types.
      const ServiceDescriptor* compiled = nullptr;
      for (const ServiceDescriptor* s : expected) {
        if (s != nullptr && s->full_name() == name) compiled = s;
      }
      if (compiled != nullptr) {
        EXPECT_EQ(MethodNames(service), MethodNames(*compiled));
        for (int i = 0; i < service.method_count() && i < compiled->method_count(); ++i) {
          EXPECT_EQ(service.method(i)->input_type()->full_name(),
                    compiled->method(i)->input_type()->full_name());
          EXPECT_EQ(service.method(i)->output_type()->full_name(),
                    compiled->method(i)->output_type()->full_name());
          EXPECT_EQ(service.method(i)->client_streaming(), compiled->method(i)->client_streaming());
          EXPECT_EQ(service.method(i)->server_streaming(), compiled->method(i)->server_streaming());
        }
      }
    }
    // The health and reflection services resolve to their real methods.
    const ServiceDescriptor* health = pool.FindServiceByName(kHealthService);
    ASSERT_NE(health, nullptr);
    EXPECT_NE(health->FindMethodByName("Check"), nullptr);
    EXPECT_NE(health->FindMethodByName("Watch"), nullptr);
    const ServiceDescriptor* reflection = pool.FindServiceByName(kReflectionService);
    ASSERT_NE(reflection, nullptr);
    EXPECT_NE(reflection->FindMethodByName("ServerReflectionInfo"), nullptr);
  }
};

// The compiled-in descriptor of `service`, found through a message of its file (which links
// that file's descriptors into this binary).
const ServiceDescriptor* Compiled(const google::protobuf::Descriptor* message_of_file,
                                  const std::string& service) {
  const ServiceDescriptor* s = message_of_file->file()->FindServiceByName(service);
  EXPECT_NE(s, nullptr) << service << " not in " << message_of_file->file()->name();
  return s;
}

TEST_F(ReflectionTest, EveryProcessListsAndDescribesEveryService) {
  CheckProcess("scheduler", stack_->scheduler(),
               {Compiled(v1::CreateJobRequest::descriptor(), "JobAdminService"),
                Compiled(v1::GetLeaderRequest::descriptor(), "LeadershipService"),
                Compiled(v1::CreateTokenRequest::descriptor(), "TokenAdminService")});
  CheckProcess("registry", stack_->registry(),
               {Compiled(v1::ListExecutorsRequest::descriptor(), "RegistryService"),
                Compiled(v1::ListAppsRequest::descriptor(), "AppAdminService")});
  CheckProcess("dispatcher", stack_->dispatcher(),
               {Compiled(v1::DispatchRequest::descriptor(), "DispatcherService")});
  CheckProcess("executor", stack_->executor(),
               {Compiled(v1::RunRequest::descriptor(), "ExecutorService")});
}

}  // namespace
}  // namespace jobwheel
