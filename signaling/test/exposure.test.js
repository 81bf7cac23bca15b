// @ts-check
// Nobody else in a run: the server listens on the addresses it is given only, and accepts connections only from the
// addresses it is told are the run's browsers. Loopback has a whole /8 of local addresses to play both roles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
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

test('listens on the given addresses only, one port on each', async () => {
  const server = await startSignalingServer({ hosts: ['127.0.0.2', '127.0.0.3'] });
  try {
    assert.equal(await get('127.0.0.2', server.port, '127.0.0.1'), 200);
    assert.equal(await get('127.0.0.3', server.port, '127.0.0.1'), 200);
    assert.equal(await get('127.0.0.4', server.port, '127.0.0.1'), 'ECONNREFUSED');
    assert.equal(await get('127.0.0.1', server.port, '127.0.0.1'), 'ECONNREFUSED');
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
