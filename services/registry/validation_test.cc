#include "services/registry/validation.h"

#include "gtest/gtest.h"

namespace jobwheel::registry {
namespace {

bool Mentions(const absl::Status& s, absl::string_view text) {
  return s.code() == absl::StatusCode::kInvalidArgument &&
         s.message().find(text) != absl::string_view::npos;
}

TEST(ValidationTest, AppNames) {
  EXPECT_TRUE(ValidateAppName("demo-app_1.v2", "app").ok());
  EXPECT_TRUE(Mentions(ValidateAppName("", "app"), "app: must not be empty"));
  EXPECT_TRUE(Mentions(ValidateAppName("has space", "app"), "app:"));
  EXPECT_TRUE(Mentions(ValidateAppName(std::string(65, 'a'), "app"), "longer than 64"));
  EXPECT_TRUE(ValidateAppName(std::string(64, 'a'), "app").ok());
}

TEST(ValidationTest, Addresses) {
  EXPECT_TRUE(ValidateAddress("127.0.0.1:7200", "a").ok());
  EXPECT_TRUE(ValidateAddress("executor-0.svc.cluster.local:7200", "a").ok());
  EXPECT_TRUE(ValidateAddress("[::1]:7200", "a").ok());
  EXPECT_TRUE(Mentions(ValidateAddress("", "a"), "a: must not be empty"));
  EXPECT_TRUE(Mentions(ValidateAddress("host", "a"), "host:port"));
  EXPECT_TRUE(Mentions(ValidateAddress(":80", "a"), "host:port"));
  EXPECT_TRUE(Mentions(ValidateAddress("host:0", "a"), "port"));
  EXPECT_TRUE(Mentions(ValidateAddress("host:65536", "a"), "port"));
  EXPECT_TRUE(Mentions(ValidateAddress("host:+80", "a"), "port"));
  EXPECT_TRUE(Mentions(ValidateAddress("ho st:80", "a"), "host"));
  EXPECT_TRUE(Mentions(ValidateAddress("a|b:80", "a"), "host"));
  EXPECT_TRUE(Mentions(ValidateAddress("[::1:80", "a"), "IPv6"));
  // One spelling per destination: the others are refused, naming the canonical one.
  EXPECT_TRUE(Mentions(ValidateAddress("LOCALHOST.:7200", "a"),
                       "a: \"LOCALHOST.:7200\" is not in canonical spelling; advertise "
                       "\"localhost:7200\""));
  EXPECT_TRUE(Mentions(ValidateAddress("[::ffff:7f00:1]:7200", "a"), "\"127.0.0.1:7200\""));
  EXPECT_TRUE(Mentions(ValidateAddress("[0:0::1]:7200", "a"), "\"[::1]:7200\""));
  EXPECT_TRUE(Mentions(ValidateAddress("127.0.0.1:07200", "a"), "\"127.0.0.1:7200\""));
  EXPECT_FALSE(ValidateAddress("2130706433:7200", "a").ok());
}

TEST(ValidationTest, Registration) {
  v1::ExecutorRegistration reg;
  reg.set_app("demo");
  reg.set_address("h:1");
  reg.add_handlers("echo");
  reg.set_instance_id("0123456789abcdef0123456789abcdef");
  EXPECT_TRUE(ValidateRegistration(reg).ok());
  reg.add_handlers("");
  EXPECT_TRUE(Mentions(ValidateRegistration(reg), "register.handlers[1]"));
  reg.mutable_handlers()->RemoveLast();
  reg.set_capacity(-1);
  EXPECT_TRUE(Mentions(ValidateRegistration(reg), "register.capacity"));
  reg.set_capacity(0);
  (*reg.mutable_labels())[""] = "x";
  EXPECT_TRUE(Mentions(ValidateRegistration(reg), "register.labels"));
  reg.clear_labels();
  reg.set_address("nope");
  EXPECT_TRUE(Mentions(ValidateRegistration(reg), "register.address"));
}

TEST(ValidationTest, RegistrationInstanceId) {
  v1::ExecutorRegistration reg;
  reg.set_app("demo");
  reg.set_address("h:1");
  EXPECT_TRUE(Mentions(ValidateRegistration(reg), "register.instance_id: must not be empty"));
  reg.set_instance_id(std::string(15, 'a'));
  EXPECT_TRUE(Mentions(ValidateRegistration(reg), "register.instance_id: must be 16 to 64"));
  reg.set_instance_id(std::string(16, 'a'));
  EXPECT_TRUE(ValidateRegistration(reg).ok());
  reg.set_instance_id(std::string(64, 'F'));
  EXPECT_TRUE(ValidateRegistration(reg).ok());
  reg.set_instance_id(std::string(65, 'a'));
  EXPECT_TRUE(Mentions(ValidateRegistration(reg), "register.instance_id: must be 16 to 64"));
  for (const std::string bad : {"0123456789abcdef 1", "0123456789abcdef|1", "0123456789abcdef\n",
                                "0123456789abcdef\xc3\xa9"}) {
    reg.set_instance_id(bad);
    EXPECT_TRUE(Mentions(ValidateRegistration(reg), "register.instance_id: may contain only"))
        << bad;
  }
}

TEST(ValidationTest, Apps) {
  v1::App app;
  app.set_name("demo");
  EXPECT_TRUE(ValidateApp(app).ok());
  app.set_address_type(v1::ADDRESS_TYPE_MANUAL);
  EXPECT_TRUE(Mentions(ValidateApp(app), "app.manual_addresses: must not be empty"));
  app.add_manual_addresses("h:1");
  EXPECT_TRUE(ValidateApp(app).ok());
  app.add_manual_addresses("h:1");
  EXPECT_TRUE(Mentions(ValidateApp(app), "app.manual_addresses[1]: duplicate"));
  app.mutable_manual_addresses()->RemoveLast();
  app.add_manual_addresses("bad");
  EXPECT_TRUE(Mentions(ValidateApp(app), "app.manual_addresses[1]"));
  app.clear_manual_addresses();
  app.set_address_type(static_cast<v1::AddressType>(9));
  EXPECT_TRUE(Mentions(ValidateApp(app), "app.address_type"));
  app.set_address_type(v1::ADDRESS_TYPE_AUTO);
  app.set_title(std::string(129, 't'));
  EXPECT_TRUE(Mentions(ValidateApp(app), "app.title"));
  app.set_name("");
  EXPECT_TRUE(Mentions(ValidateApp(app), "app.name"));
}

}  // namespace
}  // namespace jobwheel::registry
