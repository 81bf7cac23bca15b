// @ts-check
// Writes what a run observes into its run directory as it happens (so an interrupted run keeps what it recorded):
// events.jsonl, getstats-<side>.jsonl, frames-<side>.jsonl, frame-samples-<side>.i420.gz, and the manifest. Keeps the little state the progress line and the validity
// checks need; the full reports go to disk only.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { makeWritableDirectory, DirectoryError } from '../netem/dirs.js';

/** @param {any} report @param {string} type */
const ofType = (report, type) => report.filter((/** @type {any} */ s) => s.type === type);

/**
 * The numbers a person watching the call wants, from one getStats report.
 * @param {any[]} report
 */
export function summarizeReport(report) {
  const outVideo = ofType(report, 'outbound-rtp').find((s) => s.kind === 'video');
  const inVideo = ofType(report, 'inbound-rtp').find((s) => s.kind === 'video');
  const remoteIn = ofType(report, 'remote-inbound-rtp').find((s) => s.kind === 'video');
  const pair = ofType(report, 'candidate-pair').find((s) => s.nominated && s.state === 'succeeded');
  return {
    bytes_sent: outVideo?.bytesSent ?? null,
    bytes_received: inVideo?.bytesReceived ?? null,
    frames_decoded: inVideo?.framesDecoded ?? 0,
    fps_received: inVideo?.framesPerSecond ?? null,
    frame_height_received: inVideo?.frameHeight ?? null,
    quality_limitation: outVideo?.qualityLimitationReason ?? null,
    target_bitrate_bps: outVideo?.targetBitrate ?? null,
    rtt_ms: remoteIn?.roundTripTime != null ? remoteIn.roundTripTime * 1000 : null,
    available_outgoing_bitrate_bps: pair?.availableOutgoingBitrate ?? null,
    timestamp_ms: outVideo?.timestamp ?? inVideo?.timestamp ?? null,
  };
}

/** Room kept free in the run directory, given back when the disk fills so the run can still record how it ended. */
const RESERVE_BYTES = 512 * 1024;

export class RunRecorder {
  /**
   * @param {string} runDir
   * @param {{ onWriteError?: (message: string) => void }} [o] called once, when writing into the run directory first
   *   fails (a full disk): the run must stop
   */
  constructor(runDir, o = {}) {
    this.runDir = runDir;
    this.onWriteError = o.onWriteError;
    /** The first write that failed, as a sentence; null while every write succeeds. @type {string | null} */
    this.writeError = null;
    /** Files whose last line was cut short by a failed write. @type {Set<number>} */
    this.cutLine = new Set();
    makeWritableDirectory(runDir);
    this.reserveFile = path.join(runDir, '.rtclab-reserve');
    try {
      fs.writeFileSync(this.reserveFile, Buffer.alloc(RESERVE_BYTES));
    } catch (err) {
      fs.rmSync(this.reserveFile, { force: true });
      throw new DirectoryError(`no room in ${runDir} (${/** @type {NodeJS.ErrnoException} */ (err).code}): a run needs more than ${RESERVE_BYTES / 1024} KiB to start`);
    }
    this.eventsFd = fs.openSync(path.join(runDir, 'events.jsonl'), 'a');
    /** @type {Record<string, number>} */
    this.statsFds = {};
    /** frames-<side>.jsonl, opened with the side's first `frames` report. @type {Record<string, number>} */
    this.framesFds = {};
    /** frame-samples-<side>.i420.gz, opened with the side's first sample. @type {Record<string, number>} */
    this.sampleFds = {};
    /** @type {Record<string, number>} frame samples written per side */
    this.frameSampleCount = {};
    /** @type {Record<string, number>} frame records written per side */
    this.frameCount = {};
    /** @type {Record<string, ReturnType<typeof summarizeReport>[]>} recent summaries per side, newest last */
    this.recent = {};
    /** @type {Record<string, number>} samples per side */
    this.sampleCount = {};
    /** @type {Record<string, number>} samples in which the sender's video was limited by CPU */
    this.cpuLimitedCount = {};
    /** @type {{side: string, t: number, local: any, remote: any}[]} */
    this.selectedPairs = [];
    /** @type {any} */
    this.manifest = {};
  }

  /**
   * Runs a write; the first that fails gives the reserve back (so the run can still record how it ended) and tells
   * the run to stop. A write that fails is not retried: what was written before it stays.
   * @param {() => void} write @returns {boolean} whether it was written
   */
  guard(write) {
    try {
      write();
      return true;
    } catch (err) {
      const e = /** @type {NodeJS.ErrnoException} */ (err);
      if (this.writeError === null) {
        this.writeError = `cannot write the run directory ${this.runDir} (${e.code ?? e.message}); the run stopped there, keeping what was written`;
        fs.rmSync(this.reserveFile, { force: true });
        this.onWriteError?.(this.writeError);
      }
      return false;
    }
  }

  /**
   * Appends one JSON line. A line cut short by a full disk is ended before the next one, so one line at most is lost.
   * @param {number} fd @param {any} record
   */
  appendLine(fd, record) {
    this.guard(() => {
      const line = Buffer.from((this.cutLine.has(fd) ? '\n' : '') + JSON.stringify(record) + '\n');
      this.cutLine.add(fd);
      let done = 0;
      while (done < line.length) {
        const n = fs.writeSync(fd, line, done);
        if (n === 0) throw Object.assign(new Error('no room'), { code: 'ENOSPC' });
        done += n;
      }
      this.cutLine.delete(fd);
    });
  }

  /** @param {string} event @param {Record<string, any>} [fields] */
  event(event, fields = {}) {
    this.appendLine(this.eventsFd, { t: Date.now() / 1000, event, ...fields });
  }

  /** @param {string} side @param {{t_ms: number, report: any[]}} sample */
  stats(side, sample) {
    this.guard(() => { this.statsFds[side] ??= fs.openSync(path.join(this.runDir, `getstats-${side}.jsonl`), 'a'); });
    if (this.statsFds[side] !== undefined) this.appendLine(this.statsFds[side], { t: sample.t_ms / 1000, side, report: sample.report });
    const summary = summarizeReport(sample.report);
    const recent = (this.recent[side] ??= []);
    recent.push(summary);
    if (recent.length > 3) recent.shift();
    this.sampleCount[side] = (this.sampleCount[side] ?? 0) + 1;
    if (summary.quality_limitation === 'cpu') this.cpuLimitedCount[side] = (this.cpuLimitedCount[side] ?? 0) + 1;
  }

  /**
   * One batch of the page's per-frame records (docs/client.md, "Frames"), one line each into frames-<side>.jsonl;
   * the file's first line is a header with the page's sampling and clock and the clip it was given.
   * @param {string} side
   * @param {{ t_ms: number, read_every: number, sample_every?: number, time_origin_ms: number, track_frames_missing?: string | null,
   *   dropped: number, frames: any[] }} batch
   * @param {Record<string, any>} clip what the side's camera played (media/stamp.js clipInfo, and its path)
   */
  frames(side, batch, clip) {
    if (this.framesFds[side] === undefined) {
      this.guard(() => { this.framesFds[side] = fs.openSync(path.join(this.runDir, `frames-${side}.jsonl`), 'a'); });
      const fd = this.framesFds[side];
      if (fd === undefined) return;
      this.appendLine(fd, { kind: 'header', t: batch.t_ms / 1000, side, read_every: batch.read_every,
        sample_every: batch.sample_every ?? 0, time_origin_ms: batch.time_origin_ms,
        // Why the track's frames are not recorded (null: they are); a page that does not say records none.
        track_frames_missing: batch.track_frames_missing === undefined ? 'the page recorded no track frames' : batch.track_frames_missing, clip });
    }
    const fd = this.framesFds[side];
    if (fd === undefined) return;
    for (const frame of batch.frames) this.appendLine(fd, frame);
    if (batch.dropped) this.appendLine(fd, { kind: 'dropped', t: batch.t_ms / 1000, frames: batch.dropped });
    this.frameCount[side] = (this.frameCount[side] ?? 0) + batch.frames.length;
  }

  /**
   * One frame sample (the whole picture of a presented frame, client/frames.js) appended to
   * frame-samples-<side>.i420.gz as one gzip member (level 1) of a JSON line (what the page said of it, and `bytes`)
   * and the picture's raw bytes: members are whole or missing, so a run cut short loses at most the last sample
   * (docs/run-directory.md). Compressed here, synchronously: about 1.5 ms per 640x360 picture (docs/harness.md).
   * @param {string} side @param {Record<string, unknown>} meta @param {Buffer} picture
   */
  frameSample(side, meta, picture) {
    if (this.sampleFds[side] === undefined) {
      this.guard(() => { this.sampleFds[side] = fs.openSync(path.join(this.runDir, `frame-samples-${side}.i420.gz`), 'a'); });
    }
    const fd = this.sampleFds[side];
    if (fd === undefined) return;
    const head = Buffer.from(`${JSON.stringify({ kind: 'sample', ...meta, t: Date.now() / 1000, bytes: picture.length })}\n`);
    const member = zlib.gzipSync(Buffer.concat([head, picture]), { level: 1 });
    const written = this.guard(() => {
      let done = 0;
      while (done < member.length) {
        const n = fs.writeSync(fd, member, done);
        if (n === 0) throw Object.assign(new Error('no room'), { code: 'ENOSPC' });
        done += n;
      }
    });
    if (written) this.frameSampleCount[side] = (this.frameSampleCount[side] ?? 0) + 1;
  }

  /** @param {string} side */
  latest(side) {
    const recent = this.recent[side] ?? [];
    return recent[recent.length - 1] ?? null;
  }

  /** Bit rate of a counter between the two newest samples of a side. @param {string} side @param {'bytes_sent'|'bytes_received'} field */
  rateBps(side, field) {
    const recent = this.recent[side] ?? [];
    if (recent.length < 2) return null;
    const [a, b] = recent.slice(-2);
    if (a[field] == null || b[field] == null || !a.timestamp_ms || !b.timestamp_ms || b.timestamp_ms <= a.timestamp_ms) return null;
    return ((b[field] - a[field]) * 8 * 1000) / (b.timestamp_ms - a.timestamp_ms);
  }

  /** @param {string} side @param {any} pair */
  selectedPair(side, pair) {
    this.selectedPairs.push({ side, t: Date.now() / 1000, local: pair.local, remote: pair.remote });
    this.event('selected_pair', { side, local: pair.local, remote: pair.remote });
  }

  /** Writes the manifest atomically (a reader never sees half of it). @param {Record<string, any>} [update] */
  writeManifest(update = {}) {
    Object.assign(this.manifest, update);
    const file = path.join(this.runDir, 'manifest.json');
    const write = () => {
      fs.writeFileSync(file + '.tmp', JSON.stringify(this.manifest, null, 2) + '\n');
      fs.renameSync(file + '.tmp', file);
    };
    // Once the reserve is given back there is room for the manifest again: try once more.
    if (!this.guard(write)) this.guard(write);
  }

  /**
   * Where a side's browser writes its RTC event logs (created here): a hidden directory of the run directory, emptied
   * into it by moveEventLogs() once the browser is closed.
   * @param {string} side
   */
  eventLogDir(side) {
    const dir = path.join(this.runDir, `.eventlog-${side}`);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  /**
   * Moves both browsers' event logs into the run directory (closed browsers only: Chrome writes its last piece when
   * it closes) and names them in the manifest. Safe to call again: a second call finds nothing new.
   * @returns {Record<string, EventLogFile[]>}
   */
  moveEventLogs() {
    const logs = /** @type {Record<string, EventLogFile[]>} */ (this.manifest.event_logs ?? {});
    for (const side of ['a', 'b']) {
      try {
        logs[side] = [...(logs[side] ?? []), ...collectEventLogs(this.runDir, side, path.join(this.runDir, `.eventlog-${side}`))];
      } catch (err) {
        this.event('event_log_error', { side, message: /** @type {Error} */ (err).message });
      }
    }
    this.writeManifest({ event_logs: logs });
    return logs;
  }

  close() {
    for (const fd of [this.eventsFd, ...Object.values(this.statsFds), ...Object.values(this.framesFds), ...Object.values(this.sampleFds)]) {
      try { fs.closeSync(fd); } catch { /* already closed */ }
    }
    this.statsFds = {};
    this.framesFds = {};
    this.sampleFds = {};
    fs.rmSync(this.reserveFile, { force: true });
  }
}

/**
 * @typedef {{ file: string, bytes: number, complete_bytes: number, begins_with_log_start: boolean }} EventLogFile
 *   complete_bytes: the bytes up to the last whole top-level protobuf field (less than bytes: cut off mid-write)
 */

/**
 * Reads a varint at `pos`; null when the buffer ends inside it. @param {Buffer} buf @param {number} pos
 * @returns {[number, number] | null} [value, next position]
 */
function readVarint(buf, pos) {
  let value = 0;
  for (let shift = 0; pos < buf.length && shift < 64; shift += 7) {
    const byte = buf[pos++];
    value += (byte & 0x7f) * 2 ** shift;
    if (!(byte & 0x80)) return [value, pos];
  }
  return null;
}

/**
 * The framing of an RTC event log (a sequence of protobuf fields of Chrome's EventStream): how many bytes form whole
 * fields, and whether the first is the v2 log-start event (field 16). The analyzer parses the content.
 * @param {Buffer} buf
 */
export function scanEventLog(buf) {
  let pos = 0;
  let complete = 0;
  while (pos < buf.length) {
    const key = readVarint(buf, pos);
    if (!key) break;
    const wire = key[0] % 8;
    let next = key[1];
    if (wire === 2 || wire === 0) {
      const v = readVarint(buf, next);
      if (!v) break;
      next = wire === 2 ? v[1] + v[0] : v[1];
    } else if (wire === 1) next += 8;
    else if (wire === 5) next += 4;
    else break; // not protobuf: nothing after this is whole
    if (next > buf.length) break;
    pos = complete = next;
  }
  const first = readVarint(buf, 0);
  return { complete_bytes: complete, begins_with_log_start: first !== null && Math.floor(first[0] / 8) === 16 };
}

/**
 * Moves one browser's RTC event logs from the directory Chrome wrote them to into the run directory:
 * eventlog-<side>.log for its first peer connection, eventlog-<side>.2.log, ... for further ones (in Chrome's
 * numbering, event_log_<date>_<time>_<renderer>_<connection>.log). The emptied directory is removed.
 * @param {string} runDir @param {string} side @param {string} fromDir
 * @returns {EventLogFile[]}
 */
export function collectEventLogs(runDir, side, fromDir) {
  if (!fs.existsSync(fromDir)) return [];
  const numbers = (/** @type {string} */ name) => (name.match(/\d+/g) ?? []).map(Number);
  const names = fs.readdirSync(fromDir).filter((n) => /^event_log_.*\.log$/.test(n)).sort((x, y) => {
    const [a, b] = [numbers(x), numbers(y)];
    for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
    return 0;
  });
  const files = names.map((name, i) => {
    const file = i === 0 ? `eventlog-${side}.log` : `eventlog-${side}.${i + 1}.log`;
    fs.renameSync(path.join(fromDir, name), path.join(runDir, file));
    fs.chmodSync(path.join(runDir, file), 0o644); // Chrome creates it private; the run directory is shared
    const buf = fs.readFileSync(path.join(runDir, file));
    return { file, bytes: buf.length, ...scanEventLog(buf) };
  });
  fs.rmSync(fromDir, { recursive: true, force: true });
  return files;
}
