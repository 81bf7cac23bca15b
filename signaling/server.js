// @ts-check
/**
 * Signaling server: serves the test page (client/) and relays WebRTC signaling between the two members of a room.
 * Runs in the root namespace; browsers reach it over the management links.
 * Alone: `node signaling/server.js [--host 0.0.0.0] [--port 8080]` (logs JSON lines on stdout).
 */
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import express from 'express';
import { Server } from 'socket.io';
import { Rooms } from './rooms.js';
import { MAX_MESSAGE_BYTES, RELAYED_EVENTS, SCHEMAS, validateMessage } from './messages.js';

const CLIENT_DIR = fileURLToPath(new URL('../client/', import.meta.url));

/** @typedef {(entry: Record<string, unknown>) => void} LogFn one structured log object per event */

/**
 * @param {{ host?: string, port?: number, log?: LogFn }} [options] port 0 picks a free port
 * @returns {Promise<{ url: string, port: number, close: () => Promise<void> }>}
 *   url is reachable from this host (0.0.0.0 is given as 127.0.0.1)
 */
export async function startSignalingServer({ host = '0.0.0.0', port = 0, log = () => {} } = {}) {
  /** @param {string} event @param {Record<string, unknown>} [fields] */
  const emitLog = (event, fields = {}) => log({ t: Date.now() / 1000, component: 'signaling', event, ...fields });

  const app = express();
  // The page must never come from a stale cache: every run loads the current client.
  app.use(express.static(CLIENT_DIR, { etag: false, lastModified: false, setHeaders: (/** @type {http.ServerResponse} */ res) => res.setHeader('Cache-Control', 'no-store') }));
  const httpServer = http.createServer(app);
  // Messages above socket.io's own limit close the connection; between MAX_MESSAGE_BYTES and it we answer an error.
  const io = new Server(httpServer, { maxHttpBufferSize: 2 * MAX_MESSAGE_BYTES, serveClient: true });
  const rooms = new Rooms();

  io.on('connection', (socket) => {
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
  });

  await new Promise((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(port, host, () => resolve(undefined));
  });
  const address = httpServer.address();
  const boundPort = typeof address === 'object' && address ? address.port : port;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const url = `http://${urlHost}:${boundPort}/`;
  emitLog('listening', { host, port: boundPort, url, events: Object.keys(SCHEMAS) });

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
      await done;
      emitLog('closed');
    },
  };
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
