// @ts-check
// Argument parsing of netem's CLI (pure, unit-tested).

export const USAGE = `usage: node netem/cli.js <command>   (npm run net -- <command>)
  up [--scenario FILE] [--id ID] [--backend auto|kernel|userspace|uml]   bring a network up, print its id
  plan [--scenario FILE]                                            the backend it would use and why, and the commands, without running them
  exec ID a|r|b -- CMD...                                           run a command in that host's namespace
  show ID                                                           addresses, qdiscs + stats, bottleneck processes
  down ID                                                           tear the network down
  clean [ID...]                                                     remove the networks earlier runs left (runs whose owner is gone), or
                                                                    these ids' (npm run clean also removes their browser profiles)`;

export class UsageError extends Error {}

/**
 * @param {string[]} argv arguments after the script name
 * @returns {{ cmd: 'help' } | { cmd: 'up', scenario?: string, id?: string, backend?: 'auto'|'kernel'|'userspace'|'uml' }
 *   | { cmd: 'plan', scenario?: string }
 *   | { cmd: 'exec', id: string, host: 'a'|'r'|'b', command: string[] } | { cmd: 'show' | 'down', id: string }
 *   | { cmd: 'clean', ids: string[] }}
 */
export function parseArgs(argv) {
  const [cmd, ...rest] = argv;
  const id = (/** @type {string | undefined} */ v) => {
    if (!v || !/^[a-z0-9]{6}$/.test(v)) throw new UsageError(`${cmd}: run id must be 6 characters [a-z0-9] (got ${JSON.stringify(v ?? '')})`);
    return v;
  };
  switch (cmd) {
    case undefined: case 'help': case '--help': case '-h':
      return { cmd: 'help' };
    case 'up': {
      /** @type {{ cmd: 'up', scenario?: string, id?: string, backend?: any }} */
      const out = { cmd: 'up' };
      for (let i = 0; i < rest.length; i++) {
        const [flag, inline] = rest[i].split(/=(.*)/s, 2);
        const value = () => {
          const v = inline ?? rest[++i];
          if (v === undefined) throw new UsageError(`up: ${flag} needs a value`);
          return v;
        };
        if (flag === '--scenario') out.scenario = value();
        else if (flag === '--id') out.id = id(value());
        else if (flag === '--backend') {
          const b = value();
          if (!['auto', 'kernel', 'userspace', 'uml'].includes(b)) throw new UsageError(`up: --backend "${b}" is not one of auto, kernel, userspace, uml`);
          out.backend = b;
        } else throw new UsageError(`up: unknown option ${rest[i]}`);
      }
      return out;
    }
    case 'plan': {
      if (rest.length === 0) return { cmd: 'plan' };
      const [flag, inline] = rest[0].split(/=(.*)/s, 2);
      const file = inline ?? rest[1];
      if (flag !== '--scenario' || !file || rest.length > (inline === undefined ? 2 : 1)) throw new UsageError('plan: usage: plan [--scenario FILE]');
      return { cmd: 'plan', scenario: file };
    }
    case 'exec': {
      const [runId, host, sep, ...command] = rest;
      id(runId);
      if (!['a', 'r', 'b'].includes(host)) throw new UsageError(`exec: host must be a, r or b (got ${JSON.stringify(host ?? '')})`);
      if (sep !== '--' || command.length === 0) throw new UsageError('exec: usage: exec ID a|r|b -- CMD...');
      return { cmd: 'exec', id: runId, host: /** @type {'a'|'r'|'b'} */ (host), command };
    }
    case 'show': case 'down':
      if (rest.length !== 1) throw new UsageError(`${cmd}: usage: ${cmd} ID`);
      return { cmd, id: id(rest[0]) };
    case 'clean':
      return { cmd: 'clean', ids: rest.map(id) };
    default:
      throw new UsageError(`unknown command "${cmd}"\n${USAGE}`);
  }
}
