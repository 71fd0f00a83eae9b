// Checks that the console's enums (services/console/web/enums.js) name every value of their
// jobwheel.v1 enum but UNSPECIFIED, and none more, so a value added to a proto shows up in the
// console's forms and filters or fails here. Run by scripts/check-js: node
// tests/console/enums_match_proto.mjs; exit 0 when they match, 1 with each difference.
import {readFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import * as enums from '../../services/console/web/enums.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const protos = ['types.proto', 'token_admin.proto'].map((f) =>
  readFileSync(join(root, 'proto', 'jobwheel', 'v1', f), 'utf8')).join('\n');

// The values of `enum Name { ... }`, in order.
function protoValues(name) {
  const m = protos.match(new RegExp(`enum ${name} \\{([^}]*)\\}`));
  if (!m) return null;
  return [...m[1].matchAll(/^\s*([A-Z0-9_]+)\s*=/gm)].map((v) => v[1]);
}

const checked = {
  RunStatus: enums.RunStatus, RoutingStrategy: enums.RoutingStrategy,
  BlockStrategy: enums.BlockStrategy, MisfireStrategy: enums.MisfireStrategy,
  GlueType: enums.GlueType, TriggerType: enums.TriggerType, AddressType: enums.AddressType,
  Role: enums.Role,
};
const problems = [];
for (const [name, e] of Object.entries(checked)) {
  const values = protoValues(name);
  if (!values) {
    problems.push(`${name}: no enum ${name} in proto/jobwheel/v1`);
    continue;
  }
  const want = values.filter((v) => v !== e.prefix + 'UNSPECIFIED').sort();
  const have = e.values.map((v) => e.name(v)).sort();
  const missing = want.filter((v) => !have.includes(v));
  const extra = have.filter((v) => !want.includes(v));
  if (missing.length) problems.push(`${name}: enums.js lacks ${missing.join(', ')}`);
  if (extra.length) problems.push(`${name}: enums.js names ${extra.join(', ')}, not in the proto`);
}
for (const list of ['FAILURE_STATUSES', 'OPEN_STATUSES', 'CHART_STATUSES']) {
  const bad = enums[list].filter((s) => !enums.RunStatus.values.includes(s));
  if (bad.length) problems.push(`${list}: not run statuses: ${bad.join(', ')}`);
}
const chart = [...enums.CHART_STATUSES].sort().join();
if (chart !== [...enums.RunStatus.values].sort().join()) {
  problems.push('CHART_STATUSES: must stack every run status once');
}
for (const p of problems) console.log(`enums_match_proto: ${p}`);
console.log(`enums_match_proto: ${Object.keys(checked).length} enums, ${problems.length} difference(s)`);
process.exit(problems.length ? 1 : 0);
