#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_RUNS_COMMANDS_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_RUNS_COMMANDS_H_

#include "tools/jobwheelctl/command.h"

namespace jobwheel::ctl {

// `runs list|stats|get|kill|log`: JobAdminService's run RPCs.
Noun RunsNoun();

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_RUNS_COMMANDS_H_
