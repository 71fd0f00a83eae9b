// The API's enums as the console lists and tests them, in one module: each with its prefix and
// its values without the prefix, in the order the pages offer them (for a job's strategies the
// first is what the server applies to *_UNSPECIFIED). The values are jobwheel.v1's
// (proto/jobwheel/v1/types.proto, token_admin.proto); scripts/check-js checks that every list
// here names each value of its proto enum but UNSPECIFIED, none more.

class ApiEnum {
  constructor(prefix, values) {
    this.prefix = prefix;
    this.values = Object.freeze([...values]);
    Object.freeze(this);
  }

  // 'FIRST' → 'ROUTING_STRATEGY_FIRST'.
  name(short) {
    return this.prefix + short;
  }

  // 'ROUTING_STRATEGY_FIRST' → 'FIRST'; empty or missing → dflt.
  short(name, dflt = '') {
    return name ? name.replace(this.prefix, '') : dflt;
  }

  // The value the server applies to *_UNSPECIFIED (the first listed), in full.
  get default() {
    return this.name(this.values[0]);
  }

  // name, or the default when it is missing or UNSPECIFIED.
  orDefault(name) {
    return name && name !== this.prefix + 'UNSPECIFIED' ? name : this.default;
  }
}

export const RunStatus = new ApiEnum('RUN_STATUS_',
    ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'KILLED', 'LOST', 'DISCARDED']);
export const RoutingStrategy = new ApiEnum('ROUTING_STRATEGY_',
    ['FIRST', 'LAST', 'ROUND', 'RANDOM', 'CONSISTENT_HASH', 'LEAST_FREQUENTLY_USED',
      'LEAST_RECENTLY_USED', 'FAILOVER', 'BUSYOVER', 'SHARDING_BROADCAST']);
export const BlockStrategy = new ApiEnum('BLOCK_STRATEGY_',
    ['SERIAL_EXECUTION', 'DISCARD_LATER', 'COVER_EARLY']);
export const MisfireStrategy = new ApiEnum('MISFIRE_STRATEGY_', ['DO_NOTHING', 'FIRE_ONCE_NOW']);
export const GlueType = new ApiEnum('GLUE_TYPE_', ['HANDLER', 'SCRIPT_SHELL', 'SCRIPT_PYTHON']);
export const TriggerType = new ApiEnum('TRIGGER_TYPE_',
    ['CRON', 'FIX_RATE', 'MANUAL', 'MISFIRE', 'RETRY', 'PARENT']);
export const AddressType = new ApiEnum('ADDRESS_TYPE_', ['AUTO', 'MANUAL']);
// The least privilege first: the token form's default.
export const Role = new ApiEnum('ROLE_', ['VIEWER', 'OPERATOR', 'ADMIN', 'EXECUTOR']);

// The statuses of runs that failed (the runs page's "failures" filter, the dashboard's count
// and table), of runs not ended yet (the run page follows their log), and the runs chart's
// stacking order, bottom to top.
export const FAILURE_STATUSES = Object.freeze(['FAILED', 'TIMED_OUT', 'LOST']);
export const OPEN_STATUSES = Object.freeze(['PENDING', 'RUNNING']);
export const CHART_STATUSES = Object.freeze(['SUCCEEDED', 'RUNNING', 'PENDING', 'FAILED',
  'TIMED_OUT', 'LOST', 'KILLED', 'DISCARDED']);

// A job (or run) whose glue is a script, which only roles allowed scripts may change.
export function isScriptGlue(glueType) {
  return glueType === GlueType.name('SCRIPT_SHELL') || glueType === GlueType.name('SCRIPT_PYTHON');
}
