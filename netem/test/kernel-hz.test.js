// @ts-check
// The kernel tick rate the manifest records (netem/kernel-hz.js): read from a kernel config's text, from this host's
// /boot/config-<release>, and from Debian's user-mode Linux binary (--showconfig).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { configHz, hostKernelHz, umlKernelHz, HOST_CONFIGS } from '../kernel-hz.js';
import { umlBinary } from '../uml/guest.js';

test('CONFIG_HZ is read from a config text, null when absent', () => {
  assert.equal(configHz('# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n'), 250);
  assert.equal(configHz('CONFIG_HZ_PERIODIC=y\n'), null);
  assert.equal(umlKernelHz('/nonexistent/linux.uml'), null);
});

const hostConfig = HOST_CONFIGS.find((f) => existsSync(f));
test('the host kernel\'s HZ is its own config\'s', { skip: !hostConfig && 'this kernel exposes no config' }, () => {
  const raw = readFileSync(/** @type {string} */ (hostConfig));
  const text = (hostConfig?.endsWith('.gz') ? gunzipSync(raw) : raw).toString();
  assert.equal(hostKernelHz(), Number(/^CONFIG_HZ=(\d+)$/m.exec(text)?.[1]));
});

test('Debian\'s user-mode Linux runs at HZ 100', { skip: !umlBinary() && 'user-mode Linux is not installed' }, () => {
  assert.equal(umlKernelHz(/** @type {string} */ (umlBinary())), 100);
});
