#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_AUDIT_COMMANDS_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_AUDIT_COMMANDS_H_

#include "tools/jobwheelctl/command.h"

namespace jobwheel::ctl {

// `audit list [--actor A] [--target T] [--action X] [--since D]`: JobAdminService's
// ListAuditEvents, newest first.
Noun AuditNoun();

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_AUDIT_COMMANDS_H_
