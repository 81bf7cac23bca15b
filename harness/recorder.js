// @ts-check
// Writes what a run observes into its run directory as it happens (so an interrupted run keeps what it recorded):
// events.jsonl, getstats-<side>.jsonl, and the manifest. Keeps the little state the progress line and the validity
// checks need; the full reports go to disk only.
import fs from 'node:fs';
import path from 'node:path';
import { makeWritableDirectory } from '../netem/dirs.js';

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

export class RunRecorder {
  /** @param {string} runDir */
  constructor(runDir) {
    this.runDir = runDir;
    makeWritableDirectory(runDir);
    this.eventsFd = fs.openSync(path.join(runDir, 'events.jsonl'), 'a');
    /** @type {Record<string, number>} */
    this.statsFds = {};
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

  /** @param {string} event @param {Record<string, any>} [fields] */
  event(event, fields = {}) {
    fs.writeSync(this.eventsFd, JSON.stringify({ t: Date.now() / 1000, event, ...fields }) + '\n');
  }

  /** @param {string} side @param {{t_ms: number, report: any[]}} sample */
  stats(side, sample) {
    this.statsFds[side] ??= fs.openSync(path.join(this.runDir, `getstats-${side}.jsonl`), 'a');
    fs.writeSync(this.statsFds[side], JSON.stringify({ t: sample.t_ms / 1000, side, report: sample.report }) + '\n');
    const summary = summarizeReport(sample.report);
    const recent = (this.recent[side] ??= []);
    recent.push(summary);
    if (recent.length > 3) recent.shift();
    this.sampleCount[side] = (this.sampleCount[side] ?? 0) + 1;
    if (summary.quality_limitation === 'cpu') this.cpuLimitedCount[side] = (this.cpuLimitedCount[side] ?? 0) + 1;
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
    fs.writeFileSync(file + '.tmp', JSON.stringify(this.manifest, null, 2) + '\n');
    fs.renameSync(file + '.tmp', file);
  }

  close() {
    for (const fd of [this.eventsFd, ...Object.values(this.statsFds)]) {
      try { fs.closeSync(fd); } catch { /* already closed */ }
    }
    this.statsFds = {};
  }
}
