#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_LEADER_COMMANDS_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_LEADER_COMMANDS_H_

#include "tools/jobwheelctl/command.h"

namespace jobwheel::ctl {

// `leader` (no verb): LeadershipService/GetLeader on the scheduler.
Noun LeaderNoun();

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_LEADER_COMMANDS_H_
