#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_APPS_COMMANDS_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_APPS_COMMANDS_H_

#include "tools/jobwheelctl/command.h"

namespace jobwheel::ctl {

// `apps list`: AppAdminService on the registry.
Noun AppsNoun();

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_APPS_COMMANDS_H_
