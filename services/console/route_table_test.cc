#include "services/console/route_table.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace jobwheel::console {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(RouteTableTest, AdminServicesGoToTheirBackends) {
  const RouteTable& table = RouteTable::Console();
  auto jobs = table.Find("/jobwheel.v1.JobAdminService/ListJobs");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->backend, Backend::kScheduler);
  EXPECT_EQ(jobs->grpc_path, "/jobwheel.v1.JobAdminService/ListJobs");
  EXPECT_EQ(jobs->method->input_type()->full_name(), "jobwheel.v1.ListJobsRequest");

  auto tokens = table.Find("/jobwheel.v1.TokenAdminService/CreateToken");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->backend, Backend::kScheduler);
  auto leader = table.Find("/jobwheel.v1.LeadershipService/GetLeader");
  ASSERT_TRUE(leader.ok()) << leader.status();
  EXPECT_EQ(leader->backend, Backend::kScheduler);

  auto apps = table.Find("/jobwheel.v1.AppAdminService/ListApps");
  ASSERT_TRUE(apps.ok()) << apps.status();
  EXPECT_EQ(apps->backend, Backend::kRegistry);
  auto executors = table.Find("/jobwheel.v1.RegistryService/ListExecutors");
  ASSERT_TRUE(executors.ok()) << executors.status();
  EXPECT_EQ(executors->backend, Backend::kRegistry);
}

TEST(RouteTableTest, EveryMethodOfAnAllowedServiceIsRouted) {
  const auto* service = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
      "jobwheel.v1.JobAdminService");
  ASSERT_NE(service, nullptr);
  const std::vector<std::string> procedures = RouteTable::Console().Procedures();
  for (int i = 0; i < service->method_count(); ++i) {
    EXPECT_TRUE(Has(procedures, "jobwheel.v1.JobAdminService/" + service->method(i)->name()))
        << service->method(i)->name();
  }
}

TEST(RouteTableTest, InternalAndStreamingMethodsAreNotExposed) {
  const RouteTable& table = RouteTable::Console();
  for (const char* path : {
           "/jobwheel.v1.RegistryService/Heartbeat",
           "/jobwheel.v1.RegistryService/WatchExecutors",
           "/jobwheel.v1.DispatcherService/Dispatch",
           "/jobwheel.v1.DispatcherService/ReportResults",
           "/jobwheel.v1.ExecutorService/Run",
           "/jobwheel.v1.ExecutorService/Log",
           "/grpc.health.v1.Health/Check",
           "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
       }) {
    auto route = table.Find(path);
    EXPECT_EQ(route.status().code(), absl::StatusCode::kUnimplemented) << path;
  }
  const std::vector<std::string> procedures = table.Procedures();
  for (const std::string& p : procedures) {
    EXPECT_NE(p.rfind("jobwheel.v1.DispatcherService/", 0), 0u) << p;
    EXPECT_NE(p.rfind("jobwheel.v1.ExecutorService/", 0), 0u) << p;
    if (p.rfind("jobwheel.v1.RegistryService/", 0) == 0) {
      EXPECT_EQ(p, "jobwheel.v1.RegistryService/ListExecutors");
    }
  }
}

TEST(RouteTableTest, MalformedPathsAreUnimplemented) {
  const RouteTable& table = RouteTable::Console();
  for (const char* path :
       {"", "/", "jobwheel.v1.JobAdminService/ListJobs", "/jobwheel.v1.JobAdminService",
        "/jobwheel.v1.JobAdminService/", "/jobwheel.v1.JobAdminService/ListJobs/",
        "/jobwheel.v1.JobAdminService/listjobs", "//jobwheel.v1.JobAdminService/ListJobs"}) {
    EXPECT_EQ(table.Find(path).status().code(), absl::StatusCode::kUnimplemented) << path;
  }
  auto unknown = table.Find("/jobwheel.v1.JobAdminService/Nope");
  EXPECT_NE(unknown.status().message().find("jobwheel.v1.JobAdminService/Nope"),
            absl::string_view::npos);
}

TEST(RouteTableTest, RulesMayNameSomeMethodsOnly) {
  RouteTable table({{"jobwheel.v1.JobAdminService", Backend::kRegistry, {"GetJob"}},
                    {"jobwheel.v1.NoSuchService", Backend::kScheduler, {}}});
  EXPECT_EQ(table.Procedures(), std::vector<std::string>{"jobwheel.v1.JobAdminService/GetJob"});
  EXPECT_TRUE(table.Find("/jobwheel.v1.JobAdminService/GetJob").ok());
  EXPECT_FALSE(table.Find("/jobwheel.v1.JobAdminService/ListJobs").ok());
}

TEST(RouteTableTest, ApiPathsAreTheJobwheelNamespace) {
  EXPECT_TRUE(RouteTable::IsApiPath("/jobwheel.v1.JobAdminService/ListJobs"));
  EXPECT_TRUE(RouteTable::IsApiPath("/jobwheel.v1.Whatever"));
  EXPECT_FALSE(RouteTable::IsApiPath("/"));
  EXPECT_FALSE(RouteTable::IsApiPath("/index.html"));
  EXPECT_FALSE(RouteTable::IsApiPath("/jobwheel.js"));
}

}  // namespace
}  // namespace jobwheel::console
