"""The benchmark's synthetic call (shared by bench.py and the child process that writes it)."""

from rtclab import synth


def config_for(packets: int) -> synth.SynthConfig:
    """A call (video 2000 pkt/s, audio, RTCP) with 4 TCP flows through the whole of it, long enough for `packets`
    forward packets; 1 % loss, 0.1 % duplicates, 0.2 % late packets."""
    fwd_pps = 2000 + 50 + 5 + 4 * 2000
    return synth.SynthConfig(duration_s=packets / fwd_pps, video_pps=2000, tcp_flows=4, tcp_pps=2000, tcp_start_s=0.0,
                             tcp_stop_s=None, snaplen=96, loss=0.01, duplicate=0.001, reorder=0.002)
