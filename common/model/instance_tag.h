#ifndef JOBWHEEL_COMMON_MODEL_INSTANCE_TAG_H_
#define JOBWHEEL_COMMON_MODEL_INSTANCE_TAG_H_

#include <string>

#include "absl/strings/string_view.h"

namespace jobwheel {

// The public name of an executor process (Executor.instance, RunRequest.executor_instance):
// the first 32 hex digits, lower case, of the SHA-256 of its ExecutorRegistration.instance_id.
// The registry publishes it and the executor computes it for itself, so a run can name the
// process it is for without the instance id (which lets its holder re-register the address)
// ever leaving the registry. Empty for an empty instance id.
std::string InstanceTag(absl::string_view instance_id);

// The caller-token audience of calls to an executor: "<app>@<address>". Binds a token to the
// app as well as the address, so an executor refuses tokens made for another app's executor
// registered at its address.
std::string ExecutorAudience(absl::string_view app, absl::string_view address);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_MODEL_INSTANCE_TAG_H_
