// @ts-check
// Nobody else in a run: the server listens on the addresses it is given only, and accepts connections only from the
// addresses it is told are the run's browsers. Loopback has a whole /8 of local addresses to play both roles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { startSignalingServer } from '../server.js';

/**
 * GET / from a chosen local address.
 * @param {string} host @param {number} port @param {string} localAddress
 * @returns {Promise<number | string>} the HTTP status, or the error code
 */
function get(host, port, localAddress) {
  return new Promise((resolve) => {
    const req = http.get({ host, port, path: '/', localAddress, agent: false }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
    req.on('error', (err) => resolve(/** @type {NodeJS.ErrnoException} */ (err).code ?? err.message));
    req.setTimeout(3000, () => req.destroy(new Error('timeout')));
  });
}

/**
 * The addresses this process listens on at a TCP port, read from the kernel (/proc/net/tcp, the sockets whose inodes
 * are this process's descriptors): exact, whatever other processes (a parallel test, say) listen on. A connection to
 * an address nobody here listens on is no proof: another process may, and a client bound to 127.0.0.1 connecting to
 * 127.0.0.1 at its own port connects to itself (TCP's simultaneous open), which read its own request back as the reply.
 * @param {number} port @returns {string[]} "a.b.c.d:port", sorted
 */
function ownListeners(port) {
  const mine = new Set();
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/self/fd/${fd}`));
      if (m) mine.add(m[1]);
    } catch { /* closed since the listing */ }
  }
  const found = [];
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').trim().split('\n').slice(1)) {
    const [, local, , state, , , , , , inode] = line.trim().split(/\s+/);
    const [addrHex, portHex] = local.split(':');
    if (state !== '0A' || parseInt(portHex, 16) !== port || !mine.has(inode)) continue; // 0A: LISTEN
    const bytes = (addrHex.match(/../g) ?? []).map((b) => parseInt(b, 16)).reverse(); // little-endian
    found.push(`${bytes.join('.')}:${port}`);
  }
  return found.sort();
}

test('listens on the given addresses only, one port on each', async () => {
  const server = await startSignalingServer({ hosts: ['127.0.0.2', '127.0.0.3'] });
  try {
    assert.equal(await get('127.0.0.2', server.port, '127.0.0.1'), 200);
    assert.equal(await get('127.0.0.3', server.port, '127.0.0.1'), 200);
    assert.deepEqual(ownListeners(server.port), [`127.0.0.2:${server.port}`, `127.0.0.3:${server.port}`]);
    // From an address that is not the target's (no connection to itself): nothing of this server answers there.
    assert.equal(await get('127.0.0.4', server.port, '127.0.0.9'), 'ECONNREFUSED');
  } finally {
    await server.close();
  }
});

test('a client from another address of the host is refused, the run\'s browsers are served', async () => {
  /** @type {Record<string, unknown>[]} */
  const log = [];
  const server = await startSignalingServer({ hosts: ['127.0.0.2'], allowedClients: ['127.0.0.5', '127.0.0.6'], log: (e) => log.push(e) });
  try {
    assert.equal(await get('127.0.0.2', server.port, '127.0.0.5'), 200);
    assert.equal(await get('127.0.0.2', server.port, '127.0.0.6'), 200);
    assert.equal(await get('127.0.0.2', server.port, '127.0.0.7'), 'ECONNRESET');
    assert.ok(log.some((e) => e.event === 'refused' && e.address === '127.0.0.7'), 'the refusal is logged with the address');
  } finally {
    await server.close();
  }
});
