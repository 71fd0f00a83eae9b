#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_TOKENS_COMMANDS_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_TOKENS_COMMANDS_H_

#include "tools/jobwheelctl/command.h"

namespace jobwheel::ctl {

// `tokens create|list|revoke|whoami`: TokenAdminService on the scheduler.
Noun TokensNoun();

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_TOKENS_COMMANDS_H_
