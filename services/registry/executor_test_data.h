#ifndef JOBWHEEL_SERVICES_REGISTRY_EXECUTOR_TEST_DATA_H_
#define JOBWHEEL_SERVICES_REGISTRY_EXECUTOR_TEST_DATA_H_

#include <string>

#include "jobwheel/v1/types.pb.h"

namespace jobwheel::registry::store_testing {

// An executor row of `app` at `address` with every field set, handler names and label values
// that need quoting among them, for the executor store tests.
inline v1::Executor Exec(const std::string& app, const std::string& address) {
  v1::Executor e;
  e.set_app(app);
  e.set_address(address);
  e.add_handlers("echo");
  e.add_handlers("with \"quote\" and \\ back,slash");
  e.set_sdk_version("cpp-0.1");
  e.set_capacity(8);
  (*e.mutable_labels())["zone"] = "eu-1";
  (*e.mutable_labels())["team"] = "a \"b\"";
  e.set_allow_scripts(true);
  return e;
}

// Executor processes (ExecutorRegistration.instance_id).
inline constexpr char kX[] = "instance-x-0123456789";
inline constexpr char kY[] = "instance-y-0123456789";

}  // namespace jobwheel::registry::store_testing

#endif  // JOBWHEEL_SERVICES_REGISTRY_EXECUTOR_TEST_DATA_H_
