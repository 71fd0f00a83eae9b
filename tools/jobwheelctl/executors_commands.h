#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_EXECUTORS_COMMANDS_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_EXECUTORS_COMMANDS_H_

#include "tools/jobwheelctl/command.h"

namespace jobwheel::ctl {

// `executors list`: RegistryService/ListExecutors on the registry.
Noun ExecutorsNoun();

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_EXECUTORS_COMMANDS_H_
