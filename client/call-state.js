/**
 * `state` reports: the connection's states at each of the page's steps and at each DOM state change, labelled with
 * the page's role. The role is the negotiation's to set (the server may assign it).
 */
import { report } from './report.js';

const STATE_EVENTS = ['connectionstatechange', 'iceconnectionstatechange', 'icegatheringstatechange', 'signalingstatechange'];

export class CallState {
  /**
   * @param {RTCPeerConnection} pc
   * @param {(text: string) => void} onStatus a one-line status for the screen
   * @param {'caller' | 'callee' | null} role the configured role (null until the server assigns one)
   */
  constructor(pc, onStatus, role) {
    this.pc = pc;
    this.onStatus = onStatus;
    this.role = role;
  }

  /**
   * @param {string} event a DOM event name or one of the page's steps
   * @param {Record<string, unknown>} [extra]
   */
  report(event, extra = {}) {
    const { pc } = this;
    this.onStatus(`${this.role ?? '?'}: ${event}, connection ${pc.connectionState}, ice ${pc.iceConnectionState}`);
    return report('state', {
      t_ms: Date.now(),
      event,
      role: this.role,
      connectionState: pc.connectionState,
      iceConnectionState: pc.iceConnectionState,
      iceGatheringState: pc.iceGatheringState,
      signalingState: pc.signalingState,
      ...extra,
    });
  }

  /**
   * Reports every state change of the connection, then tells `onChange` which one it was.
   * @param {(event: string) => void} onChange
   */
  watch(onChange) {
    for (const event of STATE_EVENTS) {
      this.pc.addEventListener(event, () => {
        this.report(event);
        onChange(event);
      });
    }
  }
}
