#!/usr/bin/env node
// @ts-check
// Run one command in the uml backend's guest, as `ip netns exec NS` runs one in a namespace (the kernel plan's
// nsExec prefix under the uml backend):  node netem/uml/exec.js CHANNEL_DIR -- CMD [ARG...]
// It prints the command's stdout and stderr and exits with its status (127: the guest is not there, 124: no answer).
import { guestRun } from './guest.js';

const [chan, sep, ...argv] = process.argv.slice(2);
if (!chan || sep !== '--' || !argv.length) {
  console.error('usage: node netem/uml/exec.js CHANNEL_DIR -- CMD [ARG...]');
  process.exit(2);
}
const timeout_ms = Number(process.env.RTCLAB_UML_EXEC_TIMEOUT_MS ?? 60000);
const r = await guestRun(chan, argv, { timeout_ms });
process.stdout.write(r.stdout);
process.stderr.write(r.stderr);
process.exitCode = r.code;
