#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_IMPORT_COMMANDS_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_IMPORT_COMMANDS_H_

#include "tools/jobwheelctl/command.h"

namespace jobwheel::ctl {

// `import xxl-job FILE [--apply] [--app_map=GROUPID=app,...] [--time_zone=Z]`: XXL-JOB job
// definitions (tools/jobwheelctl/xxl/) into jobs through JobAdminService. A dry run unless
// --apply; an --apply run again changes nothing.
Noun ImportNoun();

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_IMPORT_COMMANDS_H_
