// @ts-check
/**
 * Signaling server: serves the test page (client/) and relays WebRTC signaling between the two members of a room.
 * Runs in the root namespace; in a run it listens on the run's two management addresses only and accepts
 * connections only from the run's two browsers' addresses (anyone else on a lab network is refused).
 * Alone: `node signaling/server.js [--host 0.0.0.0] [--port 8080]` (logs JSON lines on stdout).
 */
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import express from 'express';
import { Server } from 'socket.io';
import { Rooms } from './rooms.js';
import { MAX_MESSAGE_BYTES, RELAYED_EVENTS, SCHEMAS, validateMessage } from './messages.js';

const CLIENT_DIR = fileURLToPath(new URL('../client/', import.meta.url));

/** @typedef {(entry: Record<string, unknown>) => void} LogFn one structured log object per event */

/** The largest frame sample accepted: an I420 picture of 7680x4320 (the page's largest size) is 49.8 MB. */
const MAX_SAMPLE_BYTES = 64 * 1024 * 1024;

/**
 * A frame sample's key in its upload route (`POST /frame-samples/<key>`): the side's file key (a, b, <call>-a).
 */
export const SAMPLE_KEY = /^[A-Za-z0-9_-]{1,64}$/;

/** How often a free port common to every address is looked for before giving up. */
const PORT_TRIES = 20;

/**
 * @param {{ host?: string, hosts?: string[], port?: number, allowedClients?: string[] | null, log?: LogFn,
 *   frameSamples?: ((key: string, meta: Record<string, unknown>, body: Buffer) => void) | null }} [options]
 *   hosts: the addresses to listen on (one port on each; `host` is one address); port 0 picks a free port;
 *   allowedClients: the only remote addresses whose connections are accepted (null: any);
 *   frameSamples: where the pages' frame samples go (client/frames.js): each `POST /frame-samples/<key>` with an
 *   `x-rtclab-sample` header of JSON and the picture's raw bytes as body; absent, the route does not exist
 * @returns {Promise<{ url: string, port: number, close: () => Promise<void> }>}
 *   url is on the first address (0.0.0.0 is given as 127.0.0.1)
 */
export async function startSignalingServer({ host = '0.0.0.0', hosts = [host], port = 0, allowedClients = null, log = () => {},
  frameSamples = null } = {}) {
  /** @param {string} event @param {Record<string, unknown>} [fields] */
  const emitLog = (event, fields = {}) => log({ t: Date.now() / 1000, component: 'signaling', event, ...fields });

  const app = express();
  // The page must never come from a stale cache: every run loads the current client.
  app.use(express.static(CLIENT_DIR, { etag: false, lastModified: false, setHeaders: (/** @type {http.ServerResponse} */ res) => res.setHeader('Cache-Control', 'no-store') }));
  if (frameSamples) {
    app.post('/frame-samples/:key', express.raw({ type: 'application/octet-stream', limit: MAX_SAMPLE_BYTES }), receiveFrameSample(frameSamples));
  }
  const httpServer = http.createServer(app);
  // Messages above socket.io's own limit close the connection; between MAX_MESSAGE_BYTES and it we answer an error.
  const io = new Server(httpServer, { maxHttpBufferSize: 2 * MAX_MESSAGE_BYTES, serveClient: true });
  const rooms = new Rooms();

  io.on('connection', (socket) => relayFor(socket, io, rooms, emitLog));

  // One listening socket per address hands its connections to the one HTTP server (and so to one socket.io), which
  // itself listens nowhere: the server is reachable on exactly these addresses.
  const allowed = allowedClients ? new Set(allowedClients) : null;
  /** @param {net.Socket} socket */
  const accept = (socket) => {
    const from = socket.remoteAddress?.replace(/^::ffff:/, '');
    if (allowed && !allowed.has(from ?? '')) {
      emitLog('refused', { address: from, reason: 'not one of the run\'s browsers' });
      socket.destroy();
      return;
    }
    httpServer.emit('connection', socket);
  };
  const listeners = await listenOnAll(hosts, port, accept);
  const boundPort = /** @type {net.AddressInfo} */ (listeners[0].address()).port;
  const urlHost = hosts[0] === '0.0.0.0' || hosts[0] === '::' ? '127.0.0.1' : hosts[0];
  const url = `http://${urlHost}:${boundPort}/`;
  emitLog('listening', { hosts, port: boundPort, url, allowed_clients: allowedClients, events: Object.keys(SCHEMAS) });

  let closed = false;
  return {
    url,
    port: boundPort,
    close: async () => {
      if (closed) return;
      closed = true;
      io.disconnectSockets(true);
      // io.close() also closes the HTTP server, which waits for open connections: drop the page's keep-alive ones.
      const done = new Promise((resolve) => io.close(() => resolve(undefined)));
      httpServer.closeAllConnections();
      await Promise.all(listeners.map((l) => new Promise((resolve) => l.close(() => resolve(undefined)))));
      await done;
      emitLog('closed');
    },
  };
}

/**
 * The route of the pages' frame samples: the picture's raw bytes as body, its description as the JSON object in the
 * `x-rtclab-sample` header; each accepted sample goes to `frameSamples`.
 * @param {(key: string, meta: Record<string, unknown>, body: Buffer) => void} frameSamples
 * @returns {express.RequestHandler<{ key: string }>}
 */
function receiveFrameSample(frameSamples) {
  return (req, res) => {
    const key = req.params.key;
    if (!SAMPLE_KEY.test(key)) return res.status(400).type('text').send('bad sample key');
    /** @type {unknown} */
    let meta;
    try {
      meta = JSON.parse(String(req.get('x-rtclab-sample') ?? ''));
    } catch {
      return res.status(400).type('text').send('x-rtclab-sample must be a JSON object');
    }
    if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return res.status(400).type('text').send('x-rtclab-sample must be a JSON object');
    if (!Buffer.isBuffer(req.body) || req.body.length === 0) return res.status(400).type('text').send('no picture: the body must be application/octet-stream bytes');
    frameSamples(key, /** @type {Record<string, unknown>} */ (meta), req.body);
    return res.status(204).end();
  };
}

/**
 * One page's connection: its join and leave, and the relay of its signaling messages to the other member of its room.
 * @param {import('socket.io').Socket} socket @param {Server} io @param {Rooms} rooms
 * @param {(event: string, fields?: Record<string, unknown>) => void} emitLog
 */
function relayFor(socket, io, rooms, emitLog) {
  emitLog('connect', { socket: socket.id, address: socket.handshake.address });

  /** @param {string} event @param {string} message */
  const refuse = (event, message) => {
    emitLog('rejected', { socket: socket.id, message_event: event, error: message });
    socket.emit('error', { event, message });
  };

  const leave = (/** @type {string} */ reason) => {
    const left = rooms.leave(socket.id);
    if (!left) return false;
    socket.leave(left.room);
    for (const peer of left.peers) io.to(peer).emit('peer-left', { room: left.room, id: socket.id });
    emitLog('leave', { socket: socket.id, room: left.room, reason, remaining: left.peers.length });
    return true;
  };

  socket.onAny((event, payload) => {
    const checked = validateMessage(String(event), payload);
    if (!checked.ok) return refuse(String(event), checked.error);
    const message = checked.payload;

    if (event === 'join') {
      const joined = rooms.join(socket.id, message.room, message.role);
      if (!joined.ok) return refuse(event, joined.error);
      socket.join(message.room);
      socket.emit('joined', { room: message.room, role: joined.role, peers: joined.peers });
      for (const peer of joined.peers) io.to(peer).emit('peer-joined', { room: message.room, id: socket.id, role: joined.role });
      emitLog('join', { socket: socket.id, room: message.room, role: joined.role, peers: joined.peers.length });
    } else if (event === 'leave') {
      if (!leave('leave')) return refuse(event, 'not in a room');
      socket.emit('left', {});
    } else if (RELAYED_EVENTS.includes(event)) {
      const where = rooms.peerOf(socket.id);
      if (!where) return refuse(event, 'not in a room: join one first');
      if (!where.peer) return refuse(event, `no other member in room "${where.room}" yet`);
      io.to(where.peer).emit(event, message);
      emitLog('relay', { socket: socket.id, to: where.peer, room: where.room, message_event: event, bytes: JSON.stringify(message).length });
    }
  });

  socket.on('disconnect', (reason) => {
    leave('disconnect');
    emitLog('disconnect', { socket: socket.id, reason });
  });
}

/**
 * Listen on one port on every address: the first address picks the port (when port is 0), the others take the same;
 * if one of them has it taken, all start again on another port.
 * @param {string[]} hosts @param {number} port @param {(socket: net.Socket) => void} onConnection
 * @returns {Promise<net.Server[]>}
 */
async function listenOnAll(hosts, port, onConnection) {
  for (let attempt = 1; ; attempt++) {
    /** @type {net.Server[]} */
    const listeners = [];
    try {
      let chosen = port;
      for (const h of hosts) {
        const l = net.createServer(onConnection);
        listeners.push(l);
        await new Promise((resolve, reject) => {
          l.once('error', reject);
          l.listen(chosen, h, () => resolve(undefined));
        });
        chosen = /** @type {net.AddressInfo} */ (l.address()).port;
      }
      return listeners;
    } catch (err) {
      for (const l of listeners) l.close();
      const taken = /** @type {NodeJS.ErrnoException} */ (err).code === 'EADDRINUSE';
      if (!taken || port !== 0 || attempt >= PORT_TRIES) throw err;
    }
  }
}

async function main() {
  const { values } = parseArgs({
    options: { host: { type: 'string', default: '0.0.0.0' }, port: { type: 'string', default: '8080' } },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be an integer 0-65535, got "${values.port}"`);
  const server = await startSignalingServer({ host: values.host, port, log: (entry) => console.log(JSON.stringify(entry)) });
  const stop = () => server.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((error) => {
    console.error(`signaling: ${error.message}`);
    process.exit(1);
  });
}
