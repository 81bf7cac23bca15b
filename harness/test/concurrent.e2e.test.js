// @ts-check
// load-tolerant: completion, isolation and what is left behind; validity is not asserted (two calls on 2 cores).
// Two calls at once on one machine are isolated: both complete with their own ids, namespaces, management subnets,
// signaling servers and rooms, and neither's captures hold the other's media (each run's captures carry exactly the
// video SSRCs its own browsers reported, and none of the other run's). On 2 cores they may be marked invalid for a
// saturated CPU, which is what the validity checks are for; they must not cross.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { readPcap } from '../../netem/test-support/pcap.js';
import { leftovers } from '../../netem/test-support/leftovers.js';

const cli = fileURLToPath(new URL('../cli.js', import.meta.url));
const DEFAULT_SCENARIO = fileURLToPath(new URL('../../scenarios/default.yaml', import.meta.url));

/**
 * The default scenario with 120 s to connect (20 s by default): beside the other load-tolerant tests on 2 vCPUs a
 * call's pages loaded 19 s after its network was up, and a call that does not connect is not what this test measures.
 * @param {string} dir @returns {string} the scenario file
 */
function patientScenario(dir) {
  const doc = YAML.parse(fs.readFileSync(DEFAULT_SCENARIO, 'utf8'));
  doc.call.connect_timeout_s = 120;
  const file = path.join(dir, 'scenario.yaml');
  fs.writeFileSync(file, YAML.stringify(doc));
  return file;
}

/** @param {string} out @param {string} scenario @returns {Promise<number | null>} */
function call(out, scenario) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, '--scenario', scenario, '--duration', '8', '--out', out, '--no-analyze'], { stdio: 'ignore' });
    child.on('exit', (code) => resolve(code));
  });
}

/** The video SSRCs a run's caller sent, by its own getStats. @param {string} dir */
function sentVideoSsrcs(dir) {
  const ssrcs = new Set();
  for (const line of fs.readFileSync(path.join(dir, 'getstats-a.jsonl'), 'utf8').trim().split('\n')) {
    for (const s of JSON.parse(line).report) if (s.type === 'outbound-rtp' && s.kind === 'video') ssrcs.add(s.ssrc);
  }
  return ssrcs;
}

test('two calls at once: both complete, isolated, and neither captures the other\'s media', { timeout: 180_000 }, async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-concurrent-'));
  const dirs = [path.join(tmp, 'one'), path.join(tmp, 'two')];
  const scenario = patientScenario(tmp);
  const codes = await Promise.all(dirs.map((d) => call(d, scenario)));
  const manifests = dirs.map((d) => JSON.parse(fs.readFileSync(path.join(d, 'manifest.json'), 'utf8')));
  for (const [i, m] of manifests.entries()) {
    assert.equal(m.status, 'complete', `run ${i}: ${m.error}`);
    assert.ok(codes[i] === 0 || codes[i] === 3, `run ${i} exit ${codes[i]}`);
    assert.deepEqual(leftovers(m.id), []);
  }
  assert.notEqual(manifests[0].id, manifests[1].id);
  assert.notDeepEqual(manifests[0].topology.mgmt, manifests[1].topology.mgmt, 'their own management subnets');
  const own = dirs.map(sentVideoSsrcs);
  for (const [i, dir] of dirs.entries()) {
    assert.ok(own[i].size > 0, `run ${i} reported its video SSRC`);
    for (const side of ['a', 'b']) {
      const seen = new Set(readPcap(path.join(dir, `capture-${side}.pcap`)).filter((p) => p.src === '10.0.1.2' && p.rtp).map((p) => p.rtp?.ssrc));
      for (const ssrc of own[i]) assert.ok(seen.has(ssrc), `run ${i} capture-${side} holds its own video ${ssrc}`);
      for (const ssrc of own[1 - i]) assert.ok(!seen.has(ssrc), `run ${i} capture-${side} holds the other run's video ${ssrc}`);
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});
